package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/mcpgo"
)

// TestGoSDKMiddlewareEndToEnd instruments a server of the official Go MCP
// SDK with mcpgo, drives it from the SDK's client over its in-memory
// transport (two connections), and reads every figure back from overview,
// tools, tool detail, insights and sessions.
func TestGoSDKMiddlewareEndToEnd(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("gosdk")
	ctx := context.Background()

	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "2.5.0"}, nil)
	type searchIn struct {
		Q string `json:"q"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "search"}, func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "results for " + in.Q}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "quota exceeded"}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "boom"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("index offline")
	})
	server.AddPrompt(&mcp.Prompt{Name: "review"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "review it"}}}}, nil
	})
	server.AddResource(&mcp.Resource{URI: "docs://readme", Name: "readme"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "hello"}}}, nil
	})
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: base, Key: key, FlushInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}

	const connections = 2
	for range connections {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "0.3.1"}, nil)
		cs, err := c.Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		call := func(name string, args any) {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil && name != "missing" {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"a", "b", "c"} {
			call("search", map[string]any{"q": q})
		}
		call("fail", map[string]any{})
		call("fail", map[string]any{})
		call("boom", map[string]any{})
		call("missing", map[string]any{})
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://readme"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://nope"}); err == nil {
			t.Fatal("reading docs://nope should fail")
		}
		cs.Close()
		ss.Wait()
	}
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Per connection: initialize, tools/list, 7 tools/call, prompts/get, 2
	// resources/read; errors: fail x2 and boom (IsError results), missing
	// and docs://nope (JSON-RPC errors).
	const calls, errs = 12, 5
	var o map[string]any
	eventually(t, 30*time.Second, func() error {
		o = a.must(200, "GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
		if num(o["calls"]) < calls*connections {
			return fmt.Errorf("overview: %v calls", o["calls"])
		}
		return nil
	})
	// The other reads come from tables a batch reaches one after the other:
	// wait until each has the whole of it before comparing.
	eventually(t, 30*time.Second, func() error {
		total := func(path, key string) (n float64) {
			for _, it := range a.must(200, "GET", "/v1/mcps/"+mcpID+path, token, nil)[key].([]any) {
				n += num(it.(map[string]any)["calls"])
			}
			return n
		}
		if n := total("/tools", "items"); n != 7*connections {
			return fmt.Errorf("tools: %v calls", n)
		}
		if n := total("/sessions", "items"); n != calls*connections {
			return fmt.Errorf("sessions: %v calls", n)
		}
		return nil
	})
	want := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	want("calls", num(o["calls"]), calls*connections)
	want("errors", num(o["errors"]), errs*connections)
	want("sessions", num(o["sessions"]), connections)

	tools := map[string][2]float64{}
	for _, it := range a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools", token, nil)["items"].([]any) {
		m := it.(map[string]any)
		tools[m["name"].(string)] = [2]float64{num(m["calls"]), num(m["errors"])}
	}
	want("tools", tools, map[string][2]float64{"search": {6, 0}, "fail": {4, 4}, "boom": {2, 2}, "missing": {2, 2}})

	detail := func(name string) (types map[string]float64, clients map[string]float64, last string) {
		d := a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools/"+name, token, nil)
		types, clients = map[string]float64{}, map[string]float64{}
		for _, e := range d["error_types"].([]any) {
			m := e.(map[string]any)
			types[m["error_type"].(string)] = num(m["count"])
			last = fmt.Sprint(m["last_message"])
		}
		for _, c := range d["clients"].([]any) {
			m := c.(map[string]any)
			clients[m["client_name"].(string)] = num(m["calls"])
		}
		return types, clients, last
	}
	types, clients, last := detail("fail")
	want("fail error types", types, map[string]float64{"tool_error": 4})
	want("fail clients", clients, map[string]float64{"go-client": 4})
	want("fail message", last, "quota exceeded")
	types, _, last = detail("boom")
	want("boom error types", types, map[string]float64{"tool_error": 2})
	want("boom message", last, "index offline")
	types, _, _ = detail("missing")
	want("missing error types", types, map[string]float64{"-32602": 2})

	top := map[string]float64{}
	for _, e := range a.must(200, "GET", "/v1/mcps/"+mcpID+"/insights", token, nil)["top_errors"].(map[string]any)["items"].([]any) {
		m := e.(map[string]any)
		top[fmt.Sprint(m["method"], " ", m["name"], " ", m["error_type"])] = num(m["count"])
	}
	want("top errors", top, map[string]float64{"tools/call fail tool_error": 4, "tools/call boom tool_error": 2,
		"tools/call missing -32602": 2, "resources/read docs://nope -32602": 2}) // the SDK answers an unknown resource with InvalidParams

	sessions := a.must(200, "GET", "/v1/mcps/"+mcpID+"/sessions", token, nil)["items"].([]any)
	want("session count", len(sessions), connections)
	for _, s := range sessions {
		m := s.(map[string]any)
		want("session calls", num(m["calls"]), calls)
		want("session errors", num(m["errors"]), errs)
		want("session client", fmt.Sprint(m["client_name"], " ", m["client_version"]), "go-client 0.3.1")
	}
	if st := tel.Stats(); st.Accepted != calls*connections {
		t.Errorf("stats: %+v, want %d accepted", st, calls*connections)
	}
}

// TestGoSDKStatelessEndToEnd serves an instrumented server of the official
// Go SDK in stateless Streamable HTTP mode: 34 tool calls from 2 clients
// (2026-07-28 protocol: server/discover, client identity per request) read
// back as 2 sessions with their clients and the server's version, not 34
// sessions: the middleware sends no session_id, and the service derives one
// session per client identity (docs/sessions.md).
func TestGoSDKStatelessEndToEnd(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("gosdk-stateless")
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "3.1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "search"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: base, Key: key, FlushInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()
	for _, name := range []string{"agent-a", "agent-b"} {
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 17 {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
		}
		_ = cs.Close()
	}
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const calls = 2 * (17 + 1) // each client: server/discover and 17 tools/call
	var sessions []any
	eventually(t, 30*time.Second, func() error {
		sessions = a.must(200, "GET", "/v1/mcps/"+mcpID+"/sessions", token, nil)["items"].([]any)
		n := 0.0
		for _, s := range sessions {
			n += num(s.(map[string]any)["calls"])
		}
		if n != calls {
			return fmt.Errorf("sessions hold %v calls, want %d", n, calls)
		}
		return nil
	})
	got := map[string]float64{}
	ids := map[string]bool{}
	for _, s := range sessions {
		m := s.(map[string]any)
		id := fmt.Sprint(m["session_id"])
		if !strings.HasPrefix(id, analytics.AutoSessionPrefix) || ids[id] {
			t.Fatalf("session %v: want a derived session of its own per client", m)
		}
		ids[id] = true
		got[fmt.Sprint(m["client_name"])] = num(m["calls"])
	}
	if want := map[string]float64{"agent-a": 18, "agent-b": 18}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls per session's client %v, want %v", got, want)
	}
	o := a.must(200, "GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
	if num(o["calls"]) != calls || num(o["sessions"]) != 2 {
		t.Fatalf("overview: %v calls, %v sessions", o["calls"], o["sessions"])
	}
	b := a.must(200, "GET", "/v1/mcps/"+mcpID+"/breakdown?by=server_version", token, nil)["items"].([]any)
	if len(b) != 1 || b[0].(map[string]any)["value"] != "3.1.0" || num(b[0].(map[string]any)["calls"]) != calls {
		t.Fatalf("breakdown by server_version: %v", b)
	}
}

// TestGoSDKOversizeItemEndToEnd: a tool whose error text is 2 MiB, among
// nine ordinary calls, loses nothing (the message is cut to 1024
// characters), and an item over the body limit alone through Send loses
// only itself.
func TestGoSDKOversizeItemEndToEnd(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("gosdk-oversize")
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "search"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "huge"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 2<<20)}}}, nil, nil
	})
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: base, Key: key, FlushInterval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		name := "search"
		if i == 4 {
			name = "huge"
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	_ = cs.Close()
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := tel.Stats(); st.Accepted != 11 || st.Failed != 0 { // server/discover and 10 calls, one batch
		t.Fatalf("stats %+v, want 11 accepted", st)
	}
	eventually(t, 30*time.Second, func() error {
		d := a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools/huge", token, nil)
		types := d["error_types"].([]any)
		if len(types) != 1 {
			return fmt.Errorf("huge: error types %v", types)
		}
		if msg := fmt.Sprint(types[0].(map[string]any)["last_message"]); msg != strings.Repeat("x", 1024) {
			return fmt.Errorf("huge: last message of %d characters, want 1024", len(msg))
		}
		return nil
	})

	// Send: ten items, one over the body limit alone: nine are stored.
	c, err := client.New(client.Options{Endpoint: base, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	items := make([]analytics.Item, 10)
	for i := range items {
		items[i] = analytics.Item{Timestamp: time.Now(), SessionID: "s-oversize", Method: "tools/call", Name: "batch"}
	}
	items[3].Attributes = map[string]string{"pad": strings.Repeat("z", 2<<20)}
	res, err := c.Send(ctx, items)
	if !errors.Is(err, client.ErrBatchTooLarge) || res.Accepted != 9 {
		t.Fatalf("Send: %+v, %v; want 9 accepted and the oversize item left out", res, err)
	}
	eventually(t, 30*time.Second, func() error {
		d := a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools/batch", token, nil)
		if num(d["calls"]) != 9 {
			return fmt.Errorf("batch: %v calls, want 9", d["calls"])
		}
		return nil
	})
}
