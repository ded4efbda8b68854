package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/mcpgo"
)

// wrappedServer is a real server of the official Go SDK whose tool set
// depends on its version, as across a deployment.
func wrappedServer(version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: version}, nil)
	type searchIn struct {
		Q string `json:"q" jsonschema:"what to look for"`
	}
	type searchInV2 struct {
		Q     string `json:"q" jsonschema:"what to look for"`
		Limit int    `json:"limit,omitempty" jsonschema:"how many results"`
	}
	noop := func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	if version == "1.0.0" {
		mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the docs"}, func(ctx context.Context, r *mcp.CallToolRequest, _ searchIn) (*mcp.CallToolResult, any, error) {
			return noop(ctx, r, nil)
		})
		mcp.AddTool(s, &mcp.Tool{Name: "legacy_fetch", Description: "Fetch a page"}, noop)
	} else {
		mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the docs"}, func(ctx context.Context, r *mcp.CallToolRequest, _ searchInV2) (*mcp.CallToolResult, any, error) {
			return noop(ctx, r, nil)
		})
		mcp.AddTool(s, &mcp.Tool{Name: "fetch", Description: "Fetch a page", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, noop)
	}
	return s
}

// inventoryOf lists a server's tools through the SDK's own client and
// builds the report of that answer with the canonical hash.
func inventoryOf(t *testing.T, s *mcp.Server, version string) map[string]any {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lister", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []map[string]any
	for _, tool := range res.Tools {
		var ann any
		if tool.Annotations != nil {
			ann = tool.Annotations
		}
		h, err := analytics.ToolSchemaHash(&tool.Description, tool.InputSchema, ann)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, map[string]any{"name": tool.Name, "schema_hash": h})
	}
	return map[string]any{"server_version": version, "protocol_version": "2025-06-18", "tools": tools}
}

// TestInventoryOfARealServer reports the tools/list answers of a real Go
// SDK server before and after a "restart" that changes a tool's schema,
// adds one and drops another, and reads back the documented changes; a
// rule on tool_changes fires.
func TestInventoryOfARealServer(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("inventory")
	rule := a.must(201, "POST", "/v1/mcps/"+mcpID+"/rules", token, map[string]any{"name": "schema changed", "metric": "tool_changes",
		"tool": "search", "comparator": ">", "threshold": 1, "window_minutes": 60, "channels": []string{"in_app"}})["id"].(string)

	first := inventoryOf(t, wrappedServer("1.0.0"), "1.0.0")
	a.must(202, "POST", "/v1/ingest/inventory", key, first)
	again := inventoryOf(t, wrappedServer("1.0.0"), "1.0.0") // a restart without change
	a.must(202, "POST", "/v1/ingest/inventory", key, again)
	if ev := a.must(200, "POST", "/v1/rules/"+rule+"/evaluate", token, nil); ev["fired"] != false || ev["value"] != 1.0 {
		t.Fatalf("before the change: %v", ev)
	}
	second := inventoryOf(t, wrappedServer("2.0.0"), "2.0.0")
	a.must(202, "POST", "/v1/ingest/inventory", key, second)

	inv := a.must(200, "GET", "/v1/mcps/"+mcpID+"/inventory", token, nil)
	var changes []string
	for _, c := range inv["changes"].([]any) {
		m := c.(map[string]any)
		changes = append(changes, fmt.Sprintf("%s %s %s", m["kind"], m["tool"], m["server_version"]))
		if m["source"] != "sdk" {
			t.Errorf("change of an SDK report with source %v", m["source"])
		}
	}
	// Newest first: the second report's three changes, then the first's two.
	want := "added fetch 2.0.0|changed search 2.0.0|removed legacy_fetch 2.0.0|added legacy_fetch 1.0.0|added search 1.0.0"
	got := strings.Join(changes, "|")
	if !sameSet(got, want) || len(changes) != 5 || !sameSet(strings.Join(changes[:3], "|"), strings.Join(strings.Split(want, "|")[:3], "|")) {
		t.Fatalf("changes %s, want %s", got, want)
	}
	hash := map[string]any{}
	for _, x := range second["tools"].([]map[string]any) {
		hash[x["name"].(string)] = x["schema_hash"]
	}
	for _, x := range inv["tools"].([]any) {
		m := x.(map[string]any)
		if h, ok := hash[m["name"].(string)]; ok && m["schema_hash"] != h {
			t.Errorf("%s: hash %v, want %v", m["name"], m["schema_hash"], h)
		}
	}
	if ev := a.must(200, "POST", "/v1/rules/"+rule+"/evaluate", token, nil); ev["fired"] != true || ev["value"] != 2.0 {
		t.Fatalf("after the schema change: %v", ev)
	}
}

// sameSet compares two |-separated lists ignoring the order within one
// report (changes of one report share their time).
func sameSet(a, b string) bool {
	count := map[string]int{}
	for _, x := range strings.Split(a, "|") {
		count[x]++
	}
	for _, x := range strings.Split(b, "|") {
		count[x]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestPaginatedInventoryEndToEnd: a go-sdk server listing its 3 tools 2 a
// page, instrumented by mcpgo and walked (twice, then a page alone) by the
// SDK's own client over stateless Streamable HTTP, reports to the real
// service only its whole tool set: the inventory holds the 3 tools and
// its changes are the 3 additions, with no tool removed and added back.
func TestPaginatedInventoryEndToEnd(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("paginated")
	server := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 2})
	for _, name := range []string{"alpha", "beta", "gamma"} {
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: "tool " + name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: base, Key: key, FlushInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "walker", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var next string
	for range 2 {
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if fmt.Sprint(names) != "[alpha beta gamma]" {
			t.Fatalf("walked %v", names)
		}
		first, err := cs.ListTools(ctx, nil) // the first page alone
		if err != nil || first.NextCursor == "" {
			t.Fatalf("first page: %v, next %q", err, first.NextCursor)
		}
		next = first.NextCursor
	}
	if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: next}); err != nil { // and the last
		t.Fatal(err)
	}
	_ = cs.Close()
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	inv := a.must(200, "GET", "/v1/mcps/"+mcpID+"/inventory", token, nil)
	var tools, changes []string
	for _, it := range inv["tools"].([]any) {
		tools = append(tools, it.(map[string]any)["name"].(string))
	}
	for _, c := range inv["changes"].([]any) {
		m := c.(map[string]any)
		changes = append(changes, m["kind"].(string)+" "+m["tool"].(string))
	}
	sort.Strings(changes)
	if fmt.Sprint(tools) != "[alpha beta gamma]" || fmt.Sprint(changes) != "[added alpha added beta added gamma]" {
		t.Fatalf("inventory tools %v, changes %v; want the 3 tools, each added once", tools, changes)
	}
}
