package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
)

// The service's own MCP server (docs/mcp-endpoint.md): Streamable HTTP in
// stateless mode at /mcp, beside the API on the same engine, authenticated
// by a personal access token or a session token. Its tools are read-only
// and call the very handlers of the API's reads, with the caller's
// principal, so ranges, limits and tenant isolation are the API's own.

// MCPPath is where the MCP endpoint is mounted.
const MCPEndpointPath = "/mcp"

// maxMCPBodyBytes bounds a JSON-RPC request to /mcp: tool arguments are a
// few short strings.
const maxMCPBodyBytes = 64 << 10

type mcpPrincipalKey struct{}

// mountMCP serves /mcp on the engine. Authentication is answered as an
// HTTP 401 (problem+json) before the MCP layer sees the request; the
// principal then rides in the SDK's TokenInfo, which it hands every tool
// call (RequestExtra.TokenInfo).
func (s *Server) mountMCP() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcp-telemetry", Title: "MCP Telemetry", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: "Read-only access to MCP telemetry: calls, errors, latencies, sessions and alert rules of the MCP servers in your account. " +
			"Start with list_mcps to get MCP ids. Ranges are whole UTC days, from and to as YYYY-MM-DD, inclusive (default: the last 7 days).",
	})
	s.addMCPTools(srv)
	if s.opts.MCPServerHook != nil {
		s.opts.MCPServerHook(srv)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       s.log,
		// Every request carries a bearer credential a browser does not
		// attach on its own, and the service usually runs behind a proxy
		// on loopback with a public Host: DNS rebinding protection would
		// refuse legitimate requests and protect nothing.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxMCPBodyBytes,
	})
	verify := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, _ := r.Context().Value(mcpPrincipalKey{}).(*accounts.Principal)
		if p == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.UserID, Extra: map[string]any{"principal": p}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	serve := func(c *gin.Context) {
		p, err := s.principalFor(c.Request.Context(), c.GetHeader("Authorization"), AnyMember, true)
		if err != nil {
			prob := ProblemFromError(c.Request.Context(), err)
			if prob.Status == http.StatusUnauthorized {
				c.Header("WWW-Authenticate", `Bearer realm="telemetry"`)
			}
			writeProblem(c, prob)
			return
		}
		verify.ServeHTTP(c.Writer, c.Request.WithContext(context.WithValue(c.Request.Context(), mcpPrincipalKey{}, p)))
	}
	// Stateless: POST only. Other methods get the API's 405 problem.
	s.engine.POST(MCPEndpointPath, serve)
}

// mcpTool is one tool: its name, what a model reads about it, and a call
// returning the JSON answer and its compact text.
type mcpTool[In any] struct {
	name, title, desc string
	// store says the tool reads metrics (503-like refusal while the store
	// is not ready).
	store bool
	// bounds patches the inferred input schema (limits, date patterns).
	bounds func(*jsonschema.Schema)
	call   func(ctx context.Context, in In) (out any, text string, err error)
}

func addTool[In any](s *Server, srv *mcp.Server, t mcpTool[In]) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("httpapi: tool %s: %v", t.name, err))
	}
	if t.bounds != nil {
		t.bounds(schema)
	}
	closed := false
	tool := &mcp.Tool{Name: t.name, Title: t.title, Description: t.desc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closed}}
	mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, _ error) {
		var p *accounts.Principal
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			p, _ = req.Extra.TokenInfo.Extra["principal"].(*accounts.Principal)
		}
		if p == nil {
			return s.toolError(ctx, telemetry.Errorf(telemetry.EUNAUTHENTICATED, "No credential.")), nil, nil
		}
		ctx = context.WithValue(ctx, keyPrincipal, p)
		ctx, cancel := context.WithTimeout(ctx, s.opts.Deadlines.of(classRead))
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				loggerFrom(ctx).Error("panic in MCP tool", "tool", t.name, "panic", v, "stack", string(debug.Stack()))
				res = s.toolError(ctx, telemetry.Errorf(telemetry.EINTERNAL, "panic"))
			}
		}()
		if t.store && s.opts.StoreReady != nil && !s.opts.StoreReady() {
			return s.toolError(ctx, telemetry.Errorf(telemetry.EUNAVAILABLE, "The metrics store is unavailable; try again shortly.")), nil, nil
		}
		out, text, err := t.call(ctx, in)
		if err != nil {
			return s.toolError(ctx, err), nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}, nil, nil
	})
}

// toolError is an MCP tool error (isError) carrying the API's error code
// and client-safe message; an internal error's detail is logged, never
// sent.
func (s *Server) toolError(ctx context.Context, err error) *mcp.CallToolResult {
	code := telemetry.ErrorCode(err)
	if code == telemetry.EINTERNAL {
		if ctx.Err() != nil {
			code = telemetry.EUNAVAILABLE
			err = telemetry.Errorf(code, "The read took too long; narrow the range and try again.")
		} else {
			loggerFrom(ctx).Error("MCP tool failed", "error", err)
		}
	}
	msg := telemetry.ErrorMessage(err)
	var te *telemetry.Error
	if errors.As(err, &te) && te.Field != "" {
		// query.from, path.name: the tool's argument is the last part.
		msg += " (argument " + te.Field[strings.LastIndexByte(te.Field, '.')+1:] + ")"
	}
	body, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error " + code + ": " + msg}},
		StructuredContent: json.RawMessage(body)}
}
