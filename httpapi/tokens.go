package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
)

// TokenBody is a personal access token as lists show it: never the token.
type TokenBody struct {
	ID         string     `json:"id" example:"tok_8pW3nB6vC1xZ4mQ9"`
	Name       string     `json:"name" example:"notebook"`
	Scope      string     `json:"scope" enum:"read" example:"read"`
	Hint       string     `json:"hint" doc:"The token's prefix and last four characters, to tell tokens apart." example:"pat_••••••••a1b2"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at" doc:"When the token last authenticated a request (to the minute); null if never."`
}

// CreatedTokenBody is a new personal access token, the only response that
// carries it.
type CreatedTokenBody struct {
	ID        string    `json:"id" example:"tok_8pW3nB6vC1xZ4mQ9"`
	Name      string    `json:"name" example:"notebook"`
	Scope     string    `json:"scope" enum:"read" example:"read"`
	Token     string    `json:"token" doc:"The token, shown only here. Send it as Authorization: Bearer <token> to any read of the API, or to /mcp." example:"pat_Qm3x8ZbL1vT9kP2wN7cR4dY6eF0gH5a1b2"`
	Hint      string    `json:"hint" example:"pat_••••••••a1b2"`
	CreatedAt time.Time `json:"created_at"`
}

// NewTokenRequest names a new personal access token.
type NewTokenRequest struct {
	Name  string `json:"name" minLength:"1" maxLength:"200" doc:"A label, e.g. where the token is used." example:"notebook"`
	Scope string `json:"scope" enum:"read" doc:"What the token may do: read, the one scope, is every read a session of yours may make."`
}

// TokenPath names a personal access token in a path.
type TokenPath struct {
	TokenID string `path:"tokenId" doc:"The token's id." example:"tok_8pW3nB6vC1xZ4mQ9"`
}

// TokenList is the caller's personal access tokens.
type TokenList struct {
	Items []TokenBody `json:"items"`
}

var listTokensOp = huma.Operation{
	OperationID: "list-tokens",
	Summary:     "List your personal access tokens",
	Description: "Your tokens in this account, oldest first; hints only. Needs a session token: a personal access token cannot manage tokens.",
	Tags:        []string{"Personal access tokens"},
}

func (s *Server) listTokens(ctx context.Context, _ *struct{}) (*struct{ Body TokenList }, error) {
	p := principal(ctx)
	list, err := s.opts.Tokens.ListTokens(ctx, p.AccountID, p.UserID)
	if err != nil {
		return nil, err
	}
	out := &struct{ Body TokenList }{}
	out.Body.Items = make([]TokenBody, 0, len(list))
	for _, t := range list {
		out.Body.Items = append(out.Body.Items, TokenBody{ID: t.ID, Name: t.Name, Scope: t.Scope, Hint: t.Hint,
			CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt})
	}
	return out, nil
}

var createTokenOp = huma.Operation{
	OperationID: "create-token",
	Summary:     "Create a personal access token",
	Description: "A read credential for scripts, notebooks and MCP clients (/mcp): it acts as you, in this account, with your current role, " +
		"for every read (GET) a session of yours may make, and is refused (403 credential_not_allowed) on everything else. " +
		"The response is the only time the token is shown; only its SHA-256 is stored. At most 50 per person and account (422 limit_reached).",
	Tags:          []string{"Personal access tokens"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusUnprocessableEntity},
}

type createdTokenOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         CreatedTokenBody
}

func (s *Server) createToken(ctx context.Context, in *struct{ Body NewTokenRequest }) (*createdTokenOutput, error) {
	p := principal(ctx)
	t, err := s.opts.Tokens.CreateToken(ctx, p.AccountID, p.UserID, accounts.NewToken{Name: in.Body.Name, Scope: in.Body.Scope})
	if err != nil {
		return nil, err
	}
	return &createdTokenOutput{CacheControl: "no-store", Body: CreatedTokenBody{ID: t.ID, Name: t.Name, Scope: t.Scope,
		Token: t.Token, Hint: t.Hint, CreatedAt: t.CreatedAt}}, nil
}

var deleteTokenOp = huma.Operation{
	OperationID:   "delete-token",
	Summary:       "Delete a personal access token",
	Description:   "The token is refused from the next request on, on every instance. Only your own tokens: another person's is 404.",
	Tags:          []string{"Personal access tokens"},
	DefaultStatus: http.StatusNoContent,
	Errors:        []int{http.StatusNotFound},
}

func (s *Server) deleteToken(ctx context.Context, in *TokenPath) (*struct{}, error) {
	p := principal(ctx)
	return nil, s.opts.Tokens.DeleteToken(ctx, p.AccountID, p.UserID, in.TokenID)
}
