package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a credential to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient connects the official Go SDK client to /mcp with a token.
func mcpClient(t *testing.T, base, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}, Timeout: 30 * time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: content %v", name, res.Content)
	}
	var structured any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &structured)
	return res, structured
}

func toolText(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

// TestMCPEndpoint drives /mcp with the official Go SDK client and a
// personal access token: every tool is listed with a description and an
// input schema, and answers the API's own JSON for the same query (read
// with the same token); another account's ids are not_found through
// every tool; bad input is a tool error, never a 5xx; a request without
// a valid credential is an HTTP 401.
func TestMCPEndpoint(t *testing.T) {
	t.Parallel()
	s, _ := alertingServer(t)
	tm := newAPITeam(t, s)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	pat := expect(t, s, "POST", "/v1/account/tokens", tm.member, `{"name":"mcp","scope":"read"}`, 201, "")["token"].(string)
	otherPAT := expect(t, s, "POST", "/v1/account/tokens", tm.otherOwner, `{"name":"mcp","scope":"read"}`, 201, "")["token"].(string)
	key := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/keys", tm.owner, `{"name":"k"}`, 201, "")["key"].(string)
	rule := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, `{"name":"errs","metric":"errors","comparator":">","threshold":0,"window_minutes":60,"channels":["in_app"]}`, 201, "")["id"].(string)
	slo := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.owner, `{"name":"Search succeeds","kind":"availability","objective":0.995,"tool":"search","channels":["in_app"]}`, 201, "")["id"].(string)
	latSLO := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.owner, `{"name":"Search is fast","kind":"latency","objective":0.9,"threshold_ms":100,"tool":"search","channels":["in_app"]}`, 201, "")["id"].(string)

	now := time.Now().UTC()
	items := []map[string]any{
		{"timestamp": now.Add(-3 * time.Minute).Format(time.RFC3339Nano), "session_id": "s-1", "method": "tools/call", "name": "search", "duration_ms": 120,
			"client_name": "claude-code", "client_version": "2.0.1", "user_id": "u-1"},
		{"timestamp": now.Add(-2 * time.Minute).Format(time.RFC3339Nano), "session_id": "s-1", "method": "tools/call", "name": "search", "duration_ms": 300,
			"error_type": "TimeoutError", "error_message": "upstream timed out", "client_name": "claude-code", "client_version": "2.0.1", "user_id": "u-1"},
		{"timestamp": now.Add(-time.Minute).Format(time.RFC3339Nano), "session_id": "s-2", "method": "tools/call", "name": "fetch", "duration_ms": 40,
			"error_type": "NotFound", "error_message": "no such page", "client_name": "cursor"},
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	expect(t, s, "POST", "/v1/ingest", key, string(body), 202, "")
	base := "/v1/mcps/" + tm.mcp
	deadline := time.Now().Add(15 * time.Second)
	for {
		o := expect(t, s, "GET", base+"/overview", pat, "", 200, "")
		in := expect(t, s, "GET", base+"/insights", pat, "", 200, "")
		tl, _, _ := call(t, s, "GET", base+"/sessions/s-1", pat, "")
		if o["calls"] == 3.0 && len(in["top_errors"].(map[string]any)["items"].([]any)) == 2 && tl == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("data not readable: %v", o)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ev := expect(t, s, "POST", "/v1/rules/"+rule+"/evaluate", tm.owner, "", 200, ""); ev["fired"] != true {
		t.Fatalf("rule did not fire: %v", ev)
	}

	cs := mcpClient(t, srv.URL, pat)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		if len(tool.Description) < 40 || !strings.Contains(string(schema), `"type":"object"`) || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s: description %q, schema %s", tool.Name, tool.Description, schema)
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "compare_releases,get_breakdown,get_overview,get_rule_history,get_session_timeline,get_slo,get_tool,get_tools,list_mcps,list_releases,list_rules,list_sessions,list_slos,list_tool_changes,list_unknown_tools,top_errors" {
		t.Fatalf("tools: %v", names)
	}

	// Each tool answers the API's JSON for the same query.
	api := func(path string) any {
		t.Helper()
		rec, _ := do(t, s, "GET", path, "", "Authorization", "Bearer "+pat)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
		}
		var v any
		_ = json.Unmarshal(rec.Body.Bytes(), &v)
		return v
	}
	day := now.Format("2006-01-02")
	week := now.AddDate(0, 0, -6).Format("2006-01-02")
	cases := []struct {
		tool string
		args map[string]any
		path string
		text string // a figure the text must carry
	}{
		{"list_mcps", nil, "/v1/mcps", tm.mcp},
		{"get_overview", map[string]any{"mcp_id": tm.mcp}, base + "/overview", "3 calls, 2 errors"},
		{"get_overview", map[string]any{"mcp_id": tm.mcp, "from": week, "to": day, "compare_previous": true}, base + "/overview?compare=previous&from=" + week + "&to=" + day, "Previous period"},
		{"get_tools", map[string]any{"mcp_id": tm.mcp, "from": day}, base + "/tools?from=" + day, "search: 2 calls, 1 errors"},
		{"get_tool", map[string]any{"mcp_id": tm.mcp, "name": "search"}, base + "/tools/search", "TimeoutError"},
		{"get_breakdown", map[string]any{"mcp_id": tm.mcp, "by": "client_name", "status": "error", "limit": 1}, base + "/breakdown?by=client_name&status=error&limit=1", "(other values)"},
		{"list_sessions", map[string]any{"mcp_id": tm.mcp, "limit": 1}, base + "/sessions?limit=1", "More: cursor"},
		{"get_session_timeline", map[string]any{"mcp_id": tm.mcp, "session_id": "s-1"}, base + "/sessions/s-1", "upstream timed out"},
		{"list_rules", map[string]any{"mcp_id": tm.mcp}, base + "/rules", "firing"},
		{"list_unknown_tools", map[string]any{"mcp_id": tm.mcp}, base + "/unknown-tools", "unknown names asked for"},
		{"list_releases", map[string]any{"mcp_id": tm.mcp}, base + "/releases", "releases with traffic"},
		{"get_rule_history", map[string]any{"rule_id": rule}, "/v1/rules/" + rule + "/events", "fired"},
		{"list_slos", map[string]any{"mcp_id": tm.mcp}, base + "/slos", "99.5% of search calls succeed over 28 days"},
		{"get_slo", map[string]any{"slo_id": slo}, "/v1/slos/" + slo, "1 bad"},
		{"get_slo", map[string]any{"slo_id": latSLO}, "/v1/slos/" + latSLO, "90% of search calls answer within 100 ms over 28 days"},
	}
	for _, c := range cases {
		res, got := callTool(t, cs, c.tool, c.args)
		if res.IsError {
			t.Errorf("%s: error %s", c.tool, toolText(res))
			continue
		}
		if want := api(c.path); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: structured content\n%v\nAPI\n%v", c.tool, got, want)
		}
		if !strings.Contains(toolText(res), c.text) {
			t.Errorf("%s: text lacks %q:\n%s", c.tool, c.text, toolText(res))
		}
	}
	// list_tool_changes: the inventory's graded changes, filtered by
	// severity.
	hash := strings.Repeat("ab", 32)
	expect(t, s, "POST", "/v1/ingest/inventory", key, `{"tools":[{"name":"search","schema_hash":"`+hash+`"}]}`, 202, "")
	expect(t, s, "POST", "/v1/ingest/inventory", key, `{"server_version":"2","tools":[]}`, 202, "")
	tcRes, changes := callTool(t, cs, "list_tool_changes", map[string]any{"mcp_id": tm.mcp, "min_severity": "breaking"})
	all := api(base + "/inventory").(map[string]any)["changes"].([]any)
	if got := changes.(map[string]any)["changes"].([]any); len(all) != 2 || len(got) != 1 || !reflect.DeepEqual(got[0], all[0]) ||
		!strings.Contains(toolText(tcRes), "search removed (version 2") || !strings.Contains(toolText(tcRes), "breaking; tool_removed:") {
		t.Errorf("list_tool_changes %v, inventory %v:\n%s", got, all, toolText(tcRes))
	}
	if res, _ := callTool(t, cs, "list_tool_changes", map[string]any{"mcp_id": tm.mcp, "min_severity": "fatal"}); !res.IsError {
		t.Error("list_tool_changes took min_severity fatal")
	}
	// top_errors: the insights' top errors for the MCP, the tool's error
	// types for one tool.
	_, got := callTool(t, cs, "top_errors", map[string]any{"mcp_id": tm.mcp})
	want := api(base + "/insights").(map[string]any)["top_errors"].(map[string]any)["items"].([]any)
	items2 := got.(map[string]any)["items"].([]any)
	if len(items2) != 2 || len(want) != 2 {
		t.Fatalf("top_errors %v, insights %v", got, want)
	}
	for i, w := range want {
		g, w := items2[i].(map[string]any), w.(map[string]any)
		for _, k := range []string{"error_type", "method", "name", "count", "last_message", "last_seen_at"} {
			if g[k] != w[k] {
				t.Errorf("top_errors[%d].%s = %v, insights %v", i, k, g[k], w[k])
			}
		}
	}
	res, got := callTool(t, cs, "top_errors", map[string]any{"mcp_id": tm.mcp, "tool": "search"})
	et := api(base + "/tools/search").(map[string]any)["error_types"].([]any)
	if g := got.(map[string]any)["items"].([]any); len(g) != 1 || len(et) != 1 || g[0].(map[string]any)["count"] != et[0].(map[string]any)["count"] ||
		g[0].(map[string]any)["error_type"] != "TimeoutError" || !strings.Contains(toolText(res), "1× TimeoutError on tools/call search") {
		t.Errorf("top_errors for a tool: %v (%s), API %v", got, toolText(res), et)
	}

	// Bad input: tool errors with the API's codes.
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"get_overview", map[string]any{"mcp_id": tm.mcp, "from": "2026-13-01"}, "invalid_date"},
		{"compare_releases", map[string]any{"mcp_id": tm.mcp}, "not_found"},
		{"get_overview", map[string]any{"mcp_id": tm.mcp, "from": day, "to": week}, "invalid_range"},
		{"get_breakdown", map[string]any{"mcp_id": tm.mcp, "by": "nope"}, "invalid"},
		{"get_session_timeline", map[string]any{"mcp_id": tm.mcp, "session_id": "unknown"}, "not_found"},
		{"get_tool", map[string]any{"mcp_id": "mcp_garbage", "name": "x"}, "not_found"},
	} {
		res, _ := callTool(t, cs, c.tool, c.args)
		if !res.IsError || !strings.HasPrefix(toolText(res), "Error "+c.code+":") {
			t.Errorf("%s %v: %v %s", c.tool, c.args, res.IsError, toolText(res))
		}
	}
	// Schema bounds are enforced by the SDK before the call.
	if res, _ := callTool(t, cs, "list_sessions", map[string]any{"mcp_id": tm.mcp, "limit": 501}); !res.IsError {
		t.Errorf("limit 501 accepted: %s", toolText(res))
	}

	// Another account's token: account A's ids are not found, every tool.
	other := mcpClient(t, srv.URL, otherPAT)
	if _, got := callTool(t, other, "list_mcps", nil); strings.Contains(mustJSON(got), tm.mcp) {
		t.Errorf("other account sees A's MCP: %v", got)
	}
	for _, c := range cases[1:] {
		res, _ := callTool(t, other, c.tool, c.args)
		if !res.IsError || !strings.HasPrefix(toolText(res), "Error not_found:") {
			t.Errorf("other account, %s: %v %s", c.tool, res.IsError, toolText(res))
		}
	}
	if res, _ := callTool(t, other, "top_errors", map[string]any{"mcp_id": tm.mcp}); !res.IsError || !strings.HasPrefix(toolText(res), "Error not_found:") {
		t.Errorf("other account, top_errors: %s", toolText(res))
	}

	// A session token works too; no credential, garbage, an ingest key: an
	// HTTP answer before MCP.
	if _, got := callTool(t, mcpClient(t, srv.URL, tm.owner), "list_mcps", nil); !strings.Contains(mustJSON(got), tm.mcp) {
		t.Errorf("session token: %v", got)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, c := range []struct {
		header string
		status int
		code   string
	}{{"", 401, "unauthenticated"}, {"Bearer pat_" + strings.Repeat("A", 32), 401, "unauthenticated"}, {"Bearer " + key, 403, "credential_not_allowed"}} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != c.status || p["code"] != c.code {
			t.Errorf("%q: %d %v", c.header, resp.StatusCode, p)
		}
	}
	// Stateless: a bare tools/call, without initialize, is answered (as
	// the bench sends it).
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_overview","arguments":{"mcp_id":"`+tm.mcp+`"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+pat)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if resp.StatusCode != 200 || rpc.Result.IsError || rpc.Result.StructuredContent["calls"] != 3.0 {
		t.Errorf("bare tools/call: %d %+v", resp.StatusCode, rpc)
	}
	// A body over the endpoint's cap is refused before any work.
	req, _ = http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_mcps","arguments":{"x":"`+strings.Repeat("x", 70000)+`"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+pat)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", resp.StatusCode)
	}

	// Stateless: no GET stream, no session to DELETE.
	for _, m := range []string{"GET", "DELETE"} {
		rec, p := do(t, s, m, "/mcp", "", "Authorization", "Bearer "+pat)
		if rec.Code != 405 || p["code"] != "method_not_allowed" {
			t.Errorf("%s /mcp: %d %v", m, rec.Code, p)
		}
	}

	// A deleted token is refused at once.
	list2 := expect(t, s, "GET", "/v1/account/tokens", tm.member, "", 200, "")["items"].([]any)
	expect(t, s, "DELETE", "/v1/account/tokens/"+url.PathEscape(list2[0].(map[string]any)["id"].(string)), tm.member, "", 204, "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_mcps"}); err == nil {
		t.Error("deleted token still answered")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
