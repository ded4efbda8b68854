// Package mcpgo instruments a server of the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk/mcp) through its receiving
// middleware: every request the server handles becomes a telemetry item,
// sent in the background by package client.
//
//	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.4.0"}, nil)
//	t, err := mcpgo.Instrument(server, mcpgo.Options{}) // key from TELEMETRY_KEY
//	...
//	defer t.Close(ctx) // sends what is still queued
//
// Recording never fails a request and never waits for the network: an item
// is built after the handler returns and queued without blocking (a full
// queue drops it and counts it in Stats).
package mcpgo

import (
	"context"
	"errors"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

// Environment variables read when Options leave Key or Endpoint empty, the
// same as the TypeScript SDK's.
const (
	EnvKey      = "TELEMETRY_KEY"
	EnvEndpoint = "TELEMETRY_ENDPOINT"
)

// ToolError is the error_type of a tool result with IsError set (the
// semantic conventions' value).
const ToolError = "tool_error"

// methodDiscover is the 2026-07-28 protocol's handshake.
const methodDiscover = "server/discover"

// Options configure Instrument.
type Options struct {
	// Client options: Key defaults to $TELEMETRY_KEY, Endpoint to
	// $TELEMETRY_ENDPOINT, else the service's default base address.
	Client client.Options
	// ServerVersion overrides the version the server announces (its
	// Implementation's Version).
	ServerVersion string
	// UserID, when set, names the user of a request.
	UserID func(ctx context.Context, req mcp.Request) string
	// DisableInventory stops reporting tools/list answers to the
	// inventory endpoint (on by default).
	DisableInventory bool
	// OmitInventorySchemas sends the inventory's tools by name and hash
	// only. By default each tool's definition (description, input and
	// output schemas, annotations) goes with its hash, so that the service
	// grades tool changes from it; a definition over 64 KiB, or past
	// 1 MiB for the whole list, goes by hash only.
	OmitInventorySchemas bool
	// InventorySchemas is the former switch of the definitions, now on by
	// default (see OmitInventorySchemas); setting it changes nothing.
	InventorySchemas bool
	// ArgsHashKey is the key of args_hash (HMAC-SHA256, see ArgsHash).
	// Empty: a random key per process, so equal calls hash equal within
	// the process. Give every replica of a server whose sessions span
	// processes the same secret.
	ArgsHashKey []byte
}

// Telemetry is an instrumented server's sender.
type Telemetry struct {
	c             *client.Client
	serverVersion string
	userID        func(context.Context, mcp.Request) string
	argsHashKey   []byte

	inventory        bool
	inventorySchemas bool
	invSent          map[string]time.Time // inventory bodies sent, by body
	invBusy          bool                 // an inventory post is in flight
	invWalks         toolWalks            // paginated tools/list walks under way
	invPosts         sync.WaitGroup       // the inventory post in flight
	invCtx           context.Context      // of inventory posts; cancelled at Close's deadline
	invCancel        context.CancelFunc
	closing          bool          // Close was called: no new inventory post
	shutdown         time.Duration // bounds Close

	mu       sync.Mutex
	announce string                                     // the server's own version, or from an initialize result
	sessions map[weak.Pointer[mcp.ServerSession]]string // connection ids of sessions without an ID
}

// Instrument adds a receiving middleware to server that records every
// request it handles (notifications are not requests and are not recorded):
// method, tool, prompt or resource name, duration, errors (a JSON-RPC error
// with its code as error_type, another error with its type name, a tool
// result with IsError as "tool_error"; each with its error_kind), the
// result's size, a tools/call's args_hash, the session (see sessionID), the
// client's name and version (from initialize, or from each request's _meta
// under the 2026-07-28 protocol), the protocol version and the server's
// version. It fails only when the client options are invalid (no key).
// docs/sdks.md describes what is recorded.
func Instrument(server *mcp.Server, opts Options) (*Telemetry, error) {
	co := opts.Client
	if co.Key == "" {
		co.Key = os.Getenv(EnvKey)
	}
	if co.Endpoint == "" {
		co.Endpoint = os.Getenv(EnvEndpoint)
	}
	c, err := client.New(co)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{c: c, serverVersion: opts.ServerVersion, userID: opts.UserID,
		announce: implVersion(server), sessions: map[weak.Pointer[mcp.ServerSession]]string{},
		inventory: !opts.DisableInventory, inventorySchemas: !opts.OmitInventorySchemas, invSent: map[string]time.Time{},
		argsHashKey: opts.ArgsHashKey, shutdown: co.ShutdownTimeout}
	if t.shutdown <= 0 {
		t.shutdown = client.DefaultShutdownTimeout
	}
	t.invCtx, t.invCancel = context.WithCancel(context.Background())
	server.AddReceivingMiddleware(t.middleware)
	return t, nil
}

// Flush sends what is queued; see client.Client.Flush.
func (t *Telemetry) Flush(ctx context.Context) error { return t.c.Flush(ctx) }

// Close sends what is queued and stops the sender, and waits for the
// inventory post in flight, if any; both within the client's shutdown
// deadline (Options.Client.ShutdownTimeout, default 2 s) or until ctx
// ends, where a post still in flight is cancelled.
func (t *Telemetry) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.shutdown)
	defer cancel()
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- t.c.Close(ctx) }()
	posted := make(chan struct{})
	go func() { t.invPosts.Wait(); close(posted) }()
	select {
	case <-posted:
	case <-ctx.Done():
		t.invCancel()
		<-posted
	}
	t.invCancel()
	return <-errc
}

// Stats counts the items sent, dropped and failed.
func (t *Telemetry) Stats() client.Stats { return t.c.Stats() }

func (t *Telemetry) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		t.record(ctx, method, req, start, time.Since(start), res, err)
		return res, err
	}
}

// record builds and queues the item of one handled request. Nothing in it
// may fail the request: a panic is recovered and the item dropped.
func (t *Telemetry) record(ctx context.Context, method string, req mcp.Request, start time.Time, d time.Duration, res mcp.Result, err error) {
	defer func() { _ = recover() }()
	ms := float64(d) / float64(time.Millisecond)
	it := analytics.Item{
		ID:         client.NewID(),
		Timestamp:  start,
		Method:     method,
		DurationMs: &ms,
		Status:     analytics.StatusOK,
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	describeRequest(req, ss, &it)
	if ir, ok := res.(*mcp.InitializeResult); ok && ir != nil {
		if ir.ProtocolVersion != "" {
			it.ProtocolVersion = ir.ProtocolVersion // the negotiated one
		}
		if ir.ServerInfo != nil && ir.ServerInfo.Version != "" {
			t.mu.Lock()
			t.announce = ir.ServerInfo.Version
			t.mu.Unlock()
		}
	}
	it.ServerVersion = t.serverVersion
	if it.ServerVersion == "" {
		t.mu.Lock()
		it.ServerVersion = t.announce
		t.mu.Unlock()
	}
	if t.userID != nil {
		it.UserID = t.userID(ctx, req)
	}
	it.SessionID = t.sessionID(ss, req, &it)
	setOutcome(&it, res, err)
	t.setFailure(&it, req, res, err)
	_ = t.c.Add(it) // a full queue drops and counts
	if lt, ok := res.(*mcp.ListToolsResult); ok && lt != nil && err == nil && t.inventory {
		cursor := ""
		if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
			cursor = p.Cursor
		}
		if tools, complete := t.invWalks.page(cursor, lt.Tools, lt.NextCursor, time.Now()); complete {
			t.reportInventory(tools, it.ServerVersion, it.ProtocolVersion)
		}
	}
}

// describeRequest fills in what the request says of itself: its name (the
// tool, prompt or resource), the client and the protocol version, from
// the request or, failing that, the session's initialize.
func describeRequest(req mcp.Request, ss *mcp.ServerSession, it *analytics.Item) {
	var info *mcp.Implementation
	// Since go-sdk v1.8.0 a request answers for its own client and protocol
	// (the 2026-07-28 protocol carries them in every request's _meta); older
	// releases know them from the session's initialize.
	if r, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		info = r.ClientInfo()
	}
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		it.ProtocolVersion = r.ProtocolVersion()
	}
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		it.Name = p.Name
	case *mcp.CallToolParams:
		it.Name = p.Name
	case *mcp.GetPromptParams:
		it.Name = p.Name
	case *mcp.ReadResourceParams:
		it.Name = p.URI
	case *mcp.SubscribeParams:
		it.Name = p.URI
	case *mcp.UnsubscribeParams:
		it.Name = p.URI
	case *mcp.InitializeParams:
		info = p.ClientInfo
	}
	if ss != nil && (info == nil || it.ProtocolVersion == "") {
		if ip := ss.InitializeParams(); ip != nil {
			if info == nil {
				info = ip.ClientInfo
			}
			if it.ProtocolVersion == "" {
				it.ProtocolVersion = ip.ProtocolVersion
			}
		}
	}
	if info != nil {
		it.ClientName, it.ClientVersion = info.Name, info.Version
	}
}

// setOutcome records how the request ended: an error returned by the
// handler, or a tool result flagged isError (ToolError, with its first
// text as the message).
func setOutcome(it *analytics.Item, res mcp.Result, err error) {
	switch {
	case err != nil:
		it.Status, it.ErrorType, it.ErrorMessage = analytics.StatusError, errorType(err), err.Error()
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			it.Status, it.ErrorType = analytics.StatusError, ToolError
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					it.ErrorMessage = tc.Text
					break
				}
			}
		}
	}
}

// sessionID is the transport's session id (Streamable HTTP, stateful);
// for a stateless HTTP request, which gets a session of its own from the
// SDK, none: the service derives the session from the client's identity
// and the idle timeout (docs/sessions.md); otherwise (stdio, in-memory) an
// id of the connection, kept while the session lives (a weak key, removed
// once it is collected).
func (t *Telemetry) sessionID(ss *mcp.ServerSession, req mcp.Request, it *analytics.Item) string {
	if ss == nil {
		return ""
	}
	// Over HTTP, server/discover is stateless even on a stateful handler:
	// the session the SDK makes for it is never shown to the client.
	if ex := req.GetExtra(); ex != nil && ex.Header != nil && (ss.ID() == "" || it.Method == methodDiscover) {
		return ""
	}
	if id := ss.ID(); id != "" {
		return id
	}
	key := weak.Make(ss)
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.sessions[key]; ok {
		return id
	}
	id := uuid.NewString()
	t.sessions[key] = id
	runtime.AddCleanup(ss, func(k weak.Pointer[mcp.ServerSession]) {
		t.mu.Lock()
		delete(t.sessions, k)
		t.mu.Unlock()
	}, key)
	return id
}

// implVersion is the Version of the Implementation the server was created
// with. The SDK keeps it in an unexported field and offers no accessor;
// under the 2026-07-28 protocol there is no initialize result to read it
// from (the SDK adds it to results' _meta after the middleware has run).
// It is read by reflection, and is "" when the field is not there
// (TestImplVersionReadable pins it for the SDK releases we test).
func implVersion(server *mcp.Server) (v string) {
	defer func() {
		if recover() != nil {
			v = ""
		}
	}()
	f := reflect.ValueOf(server).Elem().FieldByName("impl")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return ""
	}
	if vf := f.Elem().FieldByName("Version"); vf.IsValid() && vf.Kind() == reflect.String {
		return vf.String()
	}
	return ""
}

// errorType is the error_type of a returned error: the JSON-RPC code of a
// protocol error (as the semantic conventions' error.type has it), else the
// error's type name ("PathError" for *fs.PathError), "Error" for the
// standard library's anonymous error types.
func errorType(err error) string {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return strconv.FormatInt(we.Code, 10)
	}
	typ := reflect.TypeOf(err)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch n := typ.Name(); n {
	case "", "errorString", "wrapError", "wrapErrors", "joinError":
		return "Error"
	default:
		return n
	}
}
