package mcpgo_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/mcpgo"
	"github.com/mcpscope/telemetry/mcpgo/internal/scenario"
)

// pagingServer is a go-sdk server listing its three tools two a page,
// instrumented to send to in.
func pagingServer(t *testing.T, in *scenario.Ingest) (*mcp.Server, *mcpgo.Telemetry) {
	server := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 2})
	for _, name := range []string{"alpha", "beta", "gamma"} {
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: "tool " + name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: in.URL, Key: "ik_test", FlushInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return server, tel
}

// walk lists every tool through the client's iterator, which follows
// nextCursor page by page.
func walk(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func reportedNames(inv client.Inventory) string {
	var names []string
	for _, tool := range inv.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// A paginating server (PageSize 2, 3 tools) walked by the SDK's own
// client, in memory and over stateless Streamable HTTP (each page in a
// session of its own): only the whole list is reported, once; no page is
// reported as a list by itself (the first, whose answer has nextCursor, nor
// a second asked again with a cursor no walk awaits), which reported
// "alpha,beta" and "gamma" in turn before.
func TestInventoryPaginated(t *testing.T) {
	for _, transport := range []string{"in-memory", "stateless-http"} {
		t.Run(transport, func(t *testing.T) {
			in := scenario.NewIngest(t)
			server, tel := pagingServer(t, in)
			ctx := context.Background()
			var cs *mcp.ClientSession
			var err error
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			if transport == "in-memory" {
				st, ct := mcp.NewInMemoryTransports()
				if _, err := server.Connect(ctx, st, nil); err != nil {
					t.Fatal(err)
				}
				cs, err = c.Connect(ctx, ct, nil)
			} else {
				srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
				defer srv.Close()
				cs, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			first, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Tools) != 2 || first.NextCursor == "" {
				t.Fatalf("first page %d tools, next %q: the server does not paginate", len(first.Tools), first.NextCursor)
			}
			if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: first.NextCursor}); err != nil {
				t.Fatal(err)
			}
			// The first page alone, then its second page: a walk, complete.
			if got := fmt.Sprint(walk(t, cs)); got != "[alpha beta gamma]" {
				t.Fatalf("walked %s", got)
			}
			walk(t, cs) // the same list again: not reported again
			// The second page alone, its walk long complete: a page no
			// walk awaits, not a list.
			if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: first.NextCursor}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(5 * time.Second); len(in.Inventory()) == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			_ = cs.Close()
			if err := tel.Close(ctx); err != nil {
				t.Fatal(err)
			}
			inv := in.Inventory()
			var got []string
			for _, i := range inv {
				got = append(got, reportedNames(i))
			}
			// The stray pair (first page, then the page after it) is
			// itself a walk: the report is the same whole list.
			if len(inv) != 1 || got[0] != "alpha,beta,gamma" {
				t.Fatalf("reports %q, want one of alpha,beta,gamma", got)
			}
		})
	}
}

// Close waits for the inventory post in flight (the service answers it
// after 300 ms), within the shutdown deadline: past it, the post is
// cancelled and Close returns at the deadline.
func TestCloseWaitsForInventoryPost(t *testing.T) {
	for _, c := range []struct {
		deadline time.Duration
		wantPost bool
	}{{2 * time.Second, true}, {100 * time.Millisecond, false}} {
		var mu sync.Mutex
		answered := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/ingest/inventory" {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
				mu.Lock()
				answered++
				mu.Unlock()
			}
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"accepted":0}`))
		}))
		server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "one"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: srv.URL, Key: "ik_test", ShutdownTimeout: c.deadline}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		st, ct := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_ = cs.Close()
		start := time.Now()
		_ = tel.Close(ctx)
		took := time.Since(start)
		mu.Lock()
		got := answered
		mu.Unlock()
		srv.Close()
		if c.wantPost && (got != 1 || took < 200*time.Millisecond) {
			t.Errorf("deadline %s: Close returned after %s with %d inventory posts answered; want it to wait for the post", c.deadline, took, got)
		}
		if !c.wantPost && (got != 0 || took > c.deadline+250*time.Millisecond) {
			t.Errorf("deadline %s: Close returned after %s with %d posts answered; want it cut at the deadline", c.deadline, took, got)
		}
	}
}
