package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
)

// KeyBody is an ingest key as lists show it: never the key itself.
type KeyBody struct {
	ID         string     `json:"id" example:"key_8pW3nB6vC1xZ4mQ9"`
	Name       string     `json:"name" example:"production"`
	Hint       string     `json:"hint" doc:"The key's prefix and last four characters, to tell keys apart." example:"ik_••••••••a1b2"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at" doc:"When the key last authenticated a request (to the minute); null if never."`
}

// CreatedKeyBody is a new ingest key, the only response that carries it.
type CreatedKeyBody struct {
	ID        string    `json:"id" example:"key_8pW3nB6vC1xZ4mQ9"`
	Name      string    `json:"name" example:"production"`
	Key       string    `json:"key" doc:"The ingest key, shown only here: store it in the MCP server's configuration. Send it as Authorization: Bearer <key> to POST /v1/ingest." example:"ik_Qm3x8ZbL1vT9kP2wN7cR4dY6eF0gH5a1b2"`
	Hint      string    `json:"hint" example:"ik_••••••••a1b2"`
	CreatedAt time.Time `json:"created_at"`
}

// NewKeyRequest names a new ingest key.
type NewKeyRequest struct {
	Name string `json:"name" minLength:"1" maxLength:"200" doc:"A label, e.g. where the key is used." example:"production"`
}

// KeyPath names an ingest key in a path.
type KeyPath struct {
	KeyID string `path:"keyId" doc:"The ingest key's id." example:"key_8pW3nB6vC1xZ4mQ9"`
}

// KeyList is an MCP's ingest keys.
type KeyList struct {
	Items []KeyBody `json:"items"`
}

type createdKeyOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         CreatedKeyBody
}

var listKeysOp = huma.Operation{
	OperationID: "list-keys",
	Summary:     "List an MCP's ingest keys",
	Description: "Hints only: a key is never shown again after its creation.",
	Tags:        []string{"Ingest keys"},
	Errors:      []int{http.StatusNotFound},
}

func (s *Server) listKeys(ctx context.Context, in *MCPPath) (*struct{ Body KeyList }, error) {
	keys, err := s.opts.Keys.ListKeys(ctx, principal(ctx).AccountID, in.ID)
	if err != nil {
		return nil, err
	}
	out := &struct{ Body KeyList }{}
	out.Body.Items = make([]KeyBody, 0, len(keys))
	for _, k := range keys {
		kb := KeyBody{ID: k.ID, Name: k.Name, Hint: k.Hint, CreatedAt: k.CreatedAt.UTC()}
		if k.LastUsedAt != nil {
			t := k.LastUsedAt.UTC()
			kb.LastUsedAt = &t
		}
		out.Body.Items = append(out.Body.Items, kb)
	}
	return out, nil
}

var createKeyOp = huma.Operation{
	OperationID:   "create-key",
	Summary:       "Create an ingest key",
	Description:   "Owners and admins. The response is the only time the key is shown; only its SHA-256 is stored. An MCP may have several keys (rotate by creating a new one, then deleting the old).",
	Tags:          []string{"Ingest keys"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) createKey(ctx context.Context, in *struct {
	MCPPath
	Body NewKeyRequest
}) (*createdKeyOutput, error) {
	k, err := s.opts.Keys.CreateKey(ctx, principal(ctx).AccountID, in.ID, accounts.NewKey{Name: in.Body.Name})
	if err != nil {
		return nil, err
	}
	return &createdKeyOutput{CacheControl: "no-store", Body: CreatedKeyBody{ID: k.ID, Name: k.Name, Key: k.Key, Hint: k.Hint, CreatedAt: k.CreatedAt.UTC()}}, nil
}

var deleteKeyOp = huma.Operation{
	OperationID:   "delete-key",
	Summary:       "Delete an ingest key",
	Description:   "Owners and admins. The key stops working within 5 seconds on every instance.",
	Tags:          []string{"Ingest keys"},
	DefaultStatus: http.StatusNoContent,
	Errors:        []int{http.StatusNotFound},
}

func (s *Server) deleteKey(ctx context.Context, in *KeyPath) (*struct{}, error) {
	return nil, s.opts.Keys.DeleteKey(ctx, principal(ctx).AccountID, in.KeyID)
}
