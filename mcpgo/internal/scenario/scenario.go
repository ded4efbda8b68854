// Package scenario drives an instrumented server of the official Go MCP SDK
// the same way under every SDK release we test (the one in go.mod and the
// last release of the old protocol, in mcpgo/compat), and receives what
// package mcpgo sends on a local ingest endpoint. It uses only the SDK API
// those releases share.
package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/mcpgo"
)

// ServerVersion is the version of the server NewServer builds.
const ServerVersion = "2.5.0"

// Ingest is a local stand-in for POST /v1/ingest that keeps every item as
// sent (protocol_version included) and counts the requests.
type Ingest struct {
	URL       string
	mu        sync.Mutex
	items     []analytics.Item
	inventory []client.Inventory
	requests  int
}

// NewIngest starts the endpoint for the test.
func NewIngest(t *testing.T) *Ingest {
	in := &Ingest{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		if r.URL.Path == "/v1/ingest/inventory" {
			var inv client.Inventory
			if err := json.NewDecoder(body).Decode(&inv); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			in.mu.Lock()
			in.inventory = append(in.inventory, inv)
			in.mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var batch struct{ Items []analytics.Item }
		if err := json.NewDecoder(body).Decode(&batch); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		in.mu.Lock()
		in.items = append(in.items, batch.Items...)
		in.requests++
		in.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]int{"accepted": len(batch.Items)})
	}))
	t.Cleanup(srv.Close)
	in.URL = srv.URL
	return in
}

// Items returns what was received so far.
func (in *Ingest) Items() []analytics.Item {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]analytics.Item(nil), in.items...)
}

// Inventory returns the inventory bodies received so far.
func (in *Ingest) Inventory() []client.Inventory {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]client.Inventory(nil), in.inventory...)
}

// NewServer builds a server with the tools "search" and "fail" (an
// IsError result), instrumented to send to in.
func NewServer(t *testing.T, in *Ingest) (*mcp.Server, *mcpgo.Telemetry) {
	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: ServerVersion}, nil)
	type searchIn struct {
		Q string `json:"q"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "search"}, func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "results for " + in.Q}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "quota exceeded"}}}, nil, nil
	})
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: in.URL, Key: "ik_test", FlushInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return server, tel
}

// Drive lists the tools, then calls search n times and fail once.
func Drive(t *testing.T, cs *mcp.ClientSession, n int) {
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"q": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{}}); err != nil || !r.IsError {
		t.Fatalf("fail: %v %v", r, err)
	}
}

// InMemory connects two clients, "client-0" and "client-1" (version
// 0.3.1), over in-memory transports with opts, and drives each with 3
// searches.
func InMemory(t *testing.T, server *mcp.Server, opts *mcp.ClientSessionOptions) {
	ctx := context.Background()
	for i := range 2 {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("client-%d", i), Version: "0.3.1"}, nil)
		cs, err := c.Connect(ctx, ct, opts)
		if err != nil {
			t.Fatal(err)
		}
		Drive(t, cs, 3)
		_ = cs.Close()
		_ = ss.Wait()
	}
}

// StreamableHTTP serves server over Streamable HTTP (stateless or not) and
// drives two clients ("client-0", "client-1", version 1.0) with 16
// searches each: 34 tool calls.
func StreamableHTTP(t *testing.T, server *mcp.Server, stateless bool) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	defer srv.Close()
	for i := range 2 {
		c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("client-%d", i), Version: "1.0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		Drive(t, cs, 16)
		_ = cs.Close()
	}
}

// Close closes the telemetry and returns every item received.
func Close(t *testing.T, tel *mcpgo.Telemetry, in *Ingest) []analytics.Item {
	if err := tel.Close(context.Background()); err != nil && !errors.Is(err, client.ErrClosed) {
		t.Fatal(err)
	}
	return in.Items()
}

// Summary is what a run's items add up to.
type Summary struct {
	Methods  map[string]int    // items per method
	Sessions map[string]int    // items per session id
	Clients  map[string]int    // items per "name version"
	Protocol map[string]int    // items per protocol_version
	Servers  map[string]int    // items per server_version
	Errors   map[string]string // tool name -> error_type of its errors
}

// Summarize counts items by method, session, client, protocol and server
// version.
func Summarize(items []analytics.Item) Summary {
	s := Summary{map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]string{}}
	for _, it := range items {
		s.Methods[it.Method]++
		s.Sessions[it.SessionID]++
		s.Clients[it.ClientName+" "+it.ClientVersion]++
		s.Protocol[it.ProtocolVersion]++
		s.Servers[it.ServerVersion]++
		if it.Status == analytics.StatusError {
			s.Errors[it.Name] = it.ErrorType
		}
	}
	return s
}
