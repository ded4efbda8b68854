package main

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/mcpgo"
)

// runRelease serves one version of a real Go SDK server wrapped by our
// SDK (with the inventory's schemas), lists its tools and makes calls of
// search from the client "research-agent", each with args, once listed
// returns (the service has recorded the list); it returns the calls that
// failed.
func runRelease(t *testing.T, base, key, version string, calls int, args map[string]any, listed func()) int {
	t.Helper()
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: version}, nil)
	ok := func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil
	}
	if version == "1.0.0" {
		type in struct {
			Q string `json:"q" jsonschema:"what to look for"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the docs"}, func(ctx context.Context, r *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
			return ok(ctx, r, nil)
		})
	} else {
		type in struct {
			Q      string `json:"q" jsonschema:"what to look for"`
			Locale string `json:"locale" jsonschema:"the docs' language"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the docs"}, func(ctx context.Context, r *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
			return ok(ctx, r, nil)
		})
	}
	tel, err := mcpgo.Instrument(s, mcpgo.Options{Client: client.Options{Endpoint: base, Key: key, FlushInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "research-agent", Version: "3.1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	listed()
	failed := 0
	for range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: args})
		if err != nil || res.IsError {
			failed++
		}
	}
	_ = cs.Close()
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return failed
}

// TestBreakingToolChangeEndToEnd: version 2 of a real, wrapped server adds
// a required parameter to the tool a client used. The change is breaking
// (required_added) with that client in affected_clients and its errors
// after the change; a tool_changes rule with min_severity breaking fires
// and its message in the inbox names the tool, severity, reason and
// client; a rule with min_severity on another metric is 422.
func TestBreakingToolChangeEndToEnd(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("toolchanges")
	mcp := "/v1/mcps/" + mcpID
	if st, body := a.do("POST", mcp+"/rules", token, map[string]any{"name": "x", "metric": "errors", "min_severity": "breaking",
		"comparator": ">", "threshold": 0, "window_minutes": 60, "channels": []string{"in_app"}}); st != 422 || !strings.Contains(fmt.Sprint(body), "min_severity") {
		t.Fatalf("min_severity on errors: %d %v", st, body)
	}
	if st, _ := a.do("POST", mcp+"/rules", token, map[string]any{"name": "x", "metric": "tool_changes", "min_severity": "fatal",
		"comparator": ">", "threshold": 0, "window_minutes": 60, "channels": []string{"in_app"}}); st != 422 {
		t.Fatalf("min_severity fatal: %d", st)
	}
	rule := a.must(201, "POST", mcp+"/rules", token, map[string]any{"name": "Breaking tool changes", "metric": "tool_changes",
		"min_severity": "breaking", "comparator": ">", "threshold": 0, "window_minutes": 60, "channels": []string{"in_app"}})["id"].(string)

	changes := func(n int) func() {
		return func() {
			eventually(t, 10*time.Second, func() error {
				if c := a.must(200, "GET", mcp+"/inventory", token, nil)["changes"].([]any); len(c) != n {
					return fmt.Errorf("%d changes", len(c))
				}
				return nil
			})
		}
	}
	if failed := runRelease(t, base, key, "1.0.0", 4, map[string]any{"q": "install"}, changes(1)); failed != 0 {
		t.Fatalf("version 1: %d calls failed", failed)
	}
	if ev := a.must(200, "POST", "/v1/rules/"+rule+"/evaluate", token, nil); ev["fired"] != false {
		t.Fatalf("before version 2 (one benign addition): %v", ev)
	}
	if failed := runRelease(t, base, key, "2.0.0", 3, map[string]any{"q": "install"}, changes(2)); failed != 3 {
		t.Fatalf("version 2: %d of 3 calls without locale failed", failed)
	}

	inv := a.must(200, "GET", mcp+"/inventory", token, nil)
	var change map[string]any
	for _, c := range inv["changes"].([]any) {
		if m := c.(map[string]any); m["kind"] == "changed" {
			change = m
		}
	}
	if change == nil || change["tool"] != "search" || change["severity"] != "breaking" || change["server_version"] != "2.0.0" {
		t.Fatalf("changes %v", inv["changes"])
	}
	reasons := change["reasons"].([]any)
	if r := reasons[0].(map[string]any); r["code"] != "required_added" || !strings.Contains(r["message"].(string), "locale") {
		t.Fatalf("reasons %v", reasons)
	}
	var d map[string]any
	eventually(t, 15*time.Second, func() error {
		d = a.must(200, "GET", mcp+"/inventory/changes/"+change["id"].(string), token, nil)
		if after := d["after"].(map[string]any); after["errors"] != 3.0 {
			return fmt.Errorf("after %v before %v tools %v change %v", after, d["before"], a.must(200, "GET", mcp+"/tools", token, nil), d["at"])
		}
		return nil
	})
	clients := d["affected_clients"].([]any)
	if len(clients) != 1 || clients[0].(map[string]any)["client_name"] != "research-agent" || clients[0].(map[string]any)["calls_before"] != 4.0 {
		t.Errorf("affected clients %v", clients)
	}
	// The inventory's list carries the same clients on the change.
	for _, c := range a.must(200, "GET", mcp+"/inventory", token, nil)["changes"].([]any) {
		if m := c.(map[string]any); m["id"] == change["id"] && !reflect.DeepEqual(m["affected_clients"], d["affected_clients"]) {
			t.Errorf("inventory affected clients %v, the change's %v", m["affected_clients"], d["affected_clients"])
		}
	}
	after, before := d["after"].(map[string]any), d["before"].(map[string]any)
	if after["calls"] != 3.0 || after["error_rate"] != 1.0 || after["error_kinds"].(map[string]any)["invalid_params"] == nil ||
		before["calls"] != 4.0 || before["errors"] != 0.0 {
		t.Errorf("before %v after %v", before, after)
	}
	if !strings.Contains(d["diff"].(string), `+       "locale"`) || d["before_definition"] == nil || d["after_definition"] == nil {
		t.Errorf("diff %v, definitions %v %v", d["diff"], d["before_definition"], d["after_definition"])
	}
	if st, _ := a.do("GET", mcp+"/inventory/changes/999999999", token, nil); st != 404 {
		t.Errorf("unknown change: %d", st)
	}

	if ev := a.must(200, "POST", "/v1/rules/"+rule+"/evaluate", token, nil); ev["fired"] != true || ev["value"] != 1.0 {
		t.Fatalf("after version 2: %v", ev)
	}
	items := a.must(200, "GET", "/v1/account/inbox", token, nil)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("inbox %v", items)
	}
	body := items[0].(map[string]any)["body"].(string)
	for _, part := range []string{"search changed, breaking", "A required input property was added", "locale", "research-agent (4 calls)"} {
		if !strings.Contains(body, part) {
			t.Errorf("message %q lacks %q", body, part)
		}
	}
}
