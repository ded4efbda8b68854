package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
)

// MCPBody is a registered MCP server.
type MCPBody struct {
	ID          string        `json:"id" example:"mcp_3kTMd9Xq0bE7vR2a"`
	Name        string        `json:"name" example:"docs-search"`
	Description string        `json:"description" doc:"Empty when none was given." example:"Searches the product documentation."`
	CreatedAt   time.Time     `json:"created_at"`
	Redaction   RedactionBody `json:"redaction"`
	// SessionIdleMinutes is the idle timeout of derived sessions.
	SessionIdleMinutes int `json:"session_idle_minutes" doc:"Items sent without a session_id are given sessions by the service: one per user (else client name and version) until a gap longer than this many minutes (default 30). See POST /v1/ingest." example:"30"`
}

// RedactionBody is an MCP's server-side redaction setting.
type RedactionBody struct {
	Enabled  bool     `json:"enabled" doc:"When true, the built-in patterns and the custom ones replace matches in error_message and attribute values with [redacted] before an item is stored. Default false: strings are stored exactly as sent."`
	Patterns []string `json:"patterns" doc:"Custom Go (RE2) regular expressions, applied before the built-in ones."`
}

// RedactionPatch changes the redaction setting; fields left out stay.
type RedactionPatch struct {
	Enabled  *bool     `json:"enabled,omitempty"`
	Patterns *[]string `json:"patterns,omitempty" maxItems:"20" doc:"Replaces the custom patterns whole: at most 20, each 1 to 512 bytes of Go (RE2) syntax, not matching the empty string and compiling to at most 100 instructions; a bad one is 422 invalid at body.redaction.patterns[i]."`
}

// NewMCPRequest registers an MCP.
type NewMCPRequest struct {
	Name        string `json:"name" minLength:"1" maxLength:"200" example:"docs-search"`
	Description string `json:"description,omitempty" maxLength:"2000" example:"Searches the product documentation."`
}

// MCPPatch changes an MCP; fields left out stay as they are.
type MCPPatch struct {
	Name        *string         `json:"name,omitempty" minLength:"1" maxLength:"200" example:"docs-search-v2"`
	Description *string         `json:"description,omitempty" maxLength:"2000" doc:"An empty string clears it." example:"Searches docs and changelogs."`
	Redaction   *RedactionPatch `json:"redaction,omitempty"`
	// SessionIdleMinutes changes the idle timeout of derived sessions.
	SessionIdleMinutes *int `json:"session_idle_minutes,omitempty" minimum:"1" maximum:"1440" doc:"1 to 1440 minutes; applies to items received from then on." example:"45"`
}

// MCPPath names an MCP in a path; embed it in the input of any route under
// /v1/mcps/{id}.
type MCPPath struct {
	ID string `path:"id" doc:"The MCP's id." example:"mcp_3kTMd9Xq0bE7vR2a"`
}

// MCPList is the account's MCPs.
type MCPList struct {
	Items []MCPBody `json:"items"`
}

type mcpOutput struct{ Body MCPBody }

func newMCPOutput(m *accounts.MCP) *mcpOutput {
	patterns := m.Redaction.Patterns
	if patterns == nil {
		patterns = []string{}
	}
	return &mcpOutput{Body: MCPBody{ID: m.ID, Name: m.Name, Description: m.Description, CreatedAt: m.CreatedAt.UTC(),
		Redaction: RedactionBody{Enabled: m.Redaction.Enabled, Patterns: patterns}, SessionIdleMinutes: m.SessionIdleMinutes}}
}

var listMCPsOp = huma.Operation{
	OperationID: "list-mcps",
	Summary:     "List MCPs",
	Description: "The account's MCP servers, oldest first.",
	Tags:        []string{"MCPs"},
}

func (s *Server) listMCPs(ctx context.Context, _ *struct{}) (*struct{ Body MCPList }, error) {
	ms, err := s.opts.MCPs.ListMCPs(ctx, principal(ctx).AccountID)
	if err != nil {
		return nil, err
	}
	out := &struct{ Body MCPList }{}
	out.Body.Items = make([]MCPBody, 0, len(ms))
	for i := range ms {
		out.Body.Items = append(out.Body.Items, newMCPOutput(&ms[i]).Body)
	}
	return out, nil
}

var createMCPOp = huma.Operation{
	OperationID:   "create-mcp",
	Summary:       "Register an MCP",
	Description:   "Owners and admins. Then create an ingest key for it (POST /v1/mcps/{id}/keys) and point the MCP server's telemetry at POST /v1/ingest.",
	Tags:          []string{"MCPs"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusUnprocessableEntity},
}

func (s *Server) createMCP(ctx context.Context, in *struct{ Body NewMCPRequest }) (*mcpOutput, error) {
	m, err := s.opts.MCPs.CreateMCP(ctx, principal(ctx).AccountID, accounts.NewMCP{Name: in.Body.Name, Description: in.Body.Description})
	if err != nil {
		return nil, err
	}
	return newMCPOutput(m), nil
}

var getMCPOp = huma.Operation{
	OperationID: "get-mcp",
	Summary:     "Get an MCP",
	Description: "Another account's MCP is a 404, exactly like one that does not exist.",
	Tags:        []string{"MCPs"},
	Errors:      []int{http.StatusNotFound},
}

func (s *Server) getMCP(ctx context.Context, in *MCPPath) (*mcpOutput, error) {
	m, err := s.opts.MCPs.FindMCP(ctx, principal(ctx).AccountID, in.ID)
	if err != nil {
		return nil, err
	}
	return newMCPOutput(m), nil
}

var updateMCPOp = huma.Operation{
	OperationID: "update-mcp",
	Summary:     "Change an MCP",
	Description: "Owners and admins. Fields left out stay as they are.\n\n" + redactionDoc,
	Tags:        []string{"MCPs"},
	Errors:      []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) updateMCP(ctx context.Context, in *struct {
	MCPPath
	Body MCPPatch
}) (*mcpOutput, error) {
	upd := accounts.MCPUpdate{Name: in.Body.Name, Description: in.Body.Description, SessionIdleMinutes: in.Body.SessionIdleMinutes}
	if r := in.Body.Redaction; r != nil {
		upd.RedactionEnabled, upd.RedactionPatterns = r.Enabled, r.Patterns
	}
	m, err := s.opts.MCPs.UpdateMCP(ctx, principal(ctx).AccountID, in.ID, upd)
	if err != nil {
		return nil, err
	}
	return newMCPOutput(m), nil
}

const redactionDoc = "**Server-side redaction.** `redaction: {enabled, patterns}` (default off, so strings are stored exactly as sent). " +
	"When `enabled` is true, every item ingested for this MCP (`POST /v1/ingest` and OTLP) has each match in `error_message` and in " +
	"attribute values replaced with `[redacted]` before it is written anywhere (the write-ahead log included): first the custom " +
	"`patterns`, then the built-in ones: email addresses, bearer tokens (`Bearer …`), JSON web tokens, common API-key shapes " +
	"(Stripe `sk_live_…`, OpenAI/Anthropic `sk-…`, GitHub `ghp_…`/`github_pat_…`, AWS `AKIA…`, Google `AIza…`, Slack `xox…-`, and " +
	"this service's `ik_…`/`sess_…`) and card numbers (13 to 19 digits, spaces or dashes allowed, passing the Luhn check). Other " +
	"fields (ids, names, client fields, user_id) are identifiers and stay as sent. A change applies to ingest within " +
	"`auth.key_cache_ttl` (2 s by default); items stored before are not rewritten.\n\n" +
	"Custom patterns use Go's RE2 syntax (no catastrophic backtracking, but replacing every match of a pattern whose failed " +
	"attempts read to the end of the string, such as `a[^Z]*Z|a`, costs the square of the string's length). They are checked " +
	"on save: at most 20, each 1 to 512 bytes, valid syntax, at most 100 compiled instructions (write `x{20,}` rather than " +
	"`x{20,200}`: a search costs up to the program's size per byte), and not matching the empty string; a bad one is 422 " +
	"`invalid` at `body.redaction.patterns[i]`. `patterns` replaces the list whole.\n\n" +
	"Redaction reads each field up to its cut (1024 characters) and 1024 bytes more, replaces matches, then cuts: a secret " +
	"straddling the cut leaves nothing of itself. A payload's redaction may spend 40 ms of CPU per MiB (`ingest.redaction_budget`); " +
	"past it the payload is refused whole with 422 `redaction_budget_exceeded` (OTLP: 400), never stored unredacted. A search " +
	"restarts after a match as at the start of the text, so `^` and `\\b` may match there again (more is redacted, never less).\n\n" +
	"Example: `{\"redaction\": {\"enabled\": true, \"patterns\": [\"\\\\bcustomer-[0-9]{6}\\\\b\"]}}` turns " +
	"`lookup failed for customer-123456 (ada@example.com)` into `lookup failed for [redacted] ([redacted])`."

var deleteMCPOp = huma.Operation{
	OperationID:   "delete-mcp",
	Summary:       "Delete an MCP",
	Description:   "Owners and admins. Its ingest keys stop working within 5 seconds on every instance, and its alert rules are removed. Its stored telemetry is deleted in the background (every raw item and rollup row; the usage counts of `/v1/account/usage` stay): a deletion request of kind `mcp`, carried out like the deletion of a person's data (see DELETE /v1/mcps/{id}/users/{user_id}), and counted in the same hourly limit of deletion requests: past it 429 `rate_limited` with `Retry-After`, and the MCP stays.",
	Tags:          []string{"MCPs"},
	DefaultStatus: http.StatusNoContent,
	Errors:        []int{http.StatusNotFound, http.StatusTooManyRequests},
}

func (s *Server) deleteMCP(ctx context.Context, in *MCPPath) (*struct{}, error) {
	return nil, s.opts.MCPs.DeleteMCP(ctx, principal(ctx).AccountID, in.ID)
}
