package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestWhyAgentsFail posts, through the real binary, items with error_kind,
// response_bytes and args_hash (and hostile ones, dropped), an inventory
// listing get_forecast and search, and reads everything back exactly: the
// overview's kinds, unknown-tool and repeated calls, the tools' sizes and
// repeats, the tool page's kinds and refusals, the unknown-tools table
// with the closest name and clients, the timeline's repeats, the
// breakdown by error_kind. A rule on unknown_tool_calls fires and reaches
// the inbox; one on repeated_calls measures the loop.
func TestWhyAgentsFail(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("failures")
	hash := strings.Repeat("ab", 32)
	a.must(202, "POST", "/v1/ingest/inventory", key, map[string]any{"server_version": "1.0.0",
		"tools": []map[string]any{{"name": "get_forecast", "schema_hash": hash, "schema": map[string]any{"description": "Forecast", "inputSchema": map[string]any{"type": "object"}}},
			{"name": "search", "schema_hash": hash}}})
	// The definition sizes: name and compact schema; none without a schema.
	inv := a.must(200, "GET", "/v1/mcps/"+mcpID+"/inventory", token, nil)
	def := float64(len("get_forecast") + len(`{"description":"Forecast","inputSchema":{"type":"object"}}`))
	if tl := inv["tools"].([]any); len(tl) != 2 || tl[0].(map[string]any)["definition_bytes"] != def || tl[1].(map[string]any)["definition_bytes"] != nil ||
		inv["definition_bytes_total"] != def {
		t.Errorf("inventory definition sizes: %v, total %v, want %v", tl, inv["definition_bytes_total"], def)
	}

	now := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Second)
	n := 0
	item := func(session, name string, fields map[string]any) map[string]any {
		n++
		it := map[string]any{"id": fmt.Sprintf("f-%d", n), "timestamp": now.Add(time.Duration(n) * time.Second).Format(time.RFC3339Nano),
			"session_id": session, "method": "tools/call", "name": name, "client_name": "cursor", "duration_ms": 5}
		for k, v := range fields {
			it[k] = v
		}
		return it
	}
	items := []map[string]any{
		item("s1", "get_forecast", map[string]any{"args_hash": "k1.aa", "response_bytes": 100}),
		item("s1", "get_forecast", map[string]any{"args_hash": "k1.aa", "response_bytes": 102400}),
		item("s1", "get_forecast", map[string]any{"args_hash": "k1.aa", "response_bytes": 300}),
		item("s2", "get_forcast", map[string]any{"error_kind": "unknown_tool", "error_message": "Tool get_forcast not found", "client_name": "claude-desktop"}),
		item("s2", "search", map[string]any{"error_kind": "invalid_params", "error_message": "query: Expected string, received number"}),
		item("s2", "search", map[string]any{"error_kind": "invalid_params", "error_message": "query: Expected string, received number"}),
		item("s3", "search", map[string]any{"status": "error", "error_type": "tool_error", "error_message": "no results"}),
		// Hostile: an unknown kind, an over-long hash, a fractional size.
		item("s9", "search", map[string]any{"error_kind": "crashed"}),
		item("s9", "search", map[string]any{"args_hash": strings.Repeat("x", 129)}),
		item("s9", "search", map[string]any{"response_bytes": 1.5}),
	}
	if r := a.must(202, "POST", "/v1/ingest", key, map[string]any{"items": items}); r["accepted"] != 7.0 || r["dropped"] != 3.0 {
		t.Fatalf("ingest: %v", r)
	}
	mcp := "/v1/mcps/" + mcpID
	var o map[string]any
	eventually(t, 15*time.Second, func() error {
		// The views of one insert land one after the other: wait for
		// every rollup read below.
		o = a.must(200, "GET", mcp+"/overview", token, nil)
		tl, _ := a.must(200, "GET", mcp+"/tools", token, nil)["items"].([]any)
		st, _ := a.do("GET", mcp+"/sessions/s1", token, nil)
		bd, _ := a.must(200, "GET", mcp+"/breakdown?by=error_kind", token, nil)["items"].([]any)
		if o["calls"] != 7.0 || len(tl) != 3 || st != 200 || len(bd) != 3 || o["unknown_tool_calls"] != 1.0 {
			return fmt.Errorf("not all readable yet: calls %v, tools %d, timeline %d, breakdown %d", o["calls"], len(tl), st, len(bd))
		}
		return nil
	})
	wantKinds := []any{map[string]any{"error_kind": "invalid_params", "count": 2.0}, map[string]any{"error_kind": "tool_error", "count": 1.0},
		map[string]any{"error_kind": "unknown_tool", "count": 1.0}}
	if !reflect.DeepEqual(o["error_kinds"], wantKinds) || o["unknown_tool_calls"] != 1.0 || o["repeated_calls"] != 2.0 {
		t.Errorf("overview kinds %v, unknown %v, repeated %v", o["error_kinds"], o["unknown_tool_calls"], o["repeated_calls"])
	}
	tools := map[string]map[string]any{}
	for _, x := range a.must(200, "GET", mcp+"/tools", token, nil)["items"].([]any) {
		tools[x.(map[string]any)["name"].(string)] = x.(map[string]any)
	}
	if f := tools["get_forecast"]; f["repeated_calls"] != 2.0 || f["response_bytes_max"] != 102400.0 || f["response_bytes_p50"] != 300.0 {
		t.Errorf("tools get_forecast: %v", f)
	}
	if s := tools["search"]; s["response_bytes_max"] != nil || s["response_bytes_p50"] != nil || s["repeated_calls"] != 0.0 {
		t.Errorf("tools search: %v", s)
	}
	search := a.must(200, "GET", mcp+"/tools/search", token, nil)
	if !reflect.DeepEqual(search["error_kinds"], []any{map[string]any{"error_kind": "invalid_params", "count": 2.0}, map[string]any{"error_kind": "tool_error", "count": 1.0}}) ||
		!reflect.DeepEqual(search["refusals"], []any{map[string]any{"message": "query: Expected string, received number", "count": 2.0}}) {
		t.Errorf("tool search: kinds %v refusals %v", search["error_kinds"], search["refusals"])
	}
	unknown := a.must(200, "GET", mcp+"/unknown-tools", token, nil)["items"].([]any)
	want := map[string]any{"name": "get_forcast", "calls": 1.0, "sessions": 1.0, "closest": "get_forecast",
		"clients": []any{map[string]any{"client_name": "claude-desktop", "calls": 1.0}}, "last_seen_at": now.Add(4 * time.Second).Format("2006-01-02T15:04:05Z")}
	if len(unknown) != 1 || !reflect.DeepEqual(unknown[0], want) {
		t.Errorf("unknown tools %v, want [%v]", unknown, want)
	}
	var reps []any
	for _, x := range a.must(200, "GET", mcp+"/sessions/s1", token, nil)["items"].([]any) {
		reps = append(reps, x.(map[string]any)["repeat"])
	}
	if !reflect.DeepEqual(reps, []any{0.0, 1.0, 2.0}) {
		t.Errorf("timeline repeats %v", reps)
	}
	bd := a.must(200, "GET", mcp+"/breakdown?by=error_kind", token, nil)["items"].([]any)
	if len(bd) != 3 || bd[0].(map[string]any)["value"] != "invalid_params" || bd[0].(map[string]any)["calls"] != 2.0 {
		t.Errorf("breakdown by error_kind %v", bd)
	}

	rule := func(metric string) string {
		return a.must(201, "POST", mcp+"/rules", token, map[string]any{"name": metric, "metric": metric,
			"comparator": ">=", "threshold": 1, "window_minutes": 30, "channels": []string{"in_app"}})["id"].(string)
	}
	unknownRule, loopRule := rule("unknown_tool_calls"), rule("repeated_calls")
	if ev := a.must(200, "POST", "/v1/rules/"+unknownRule+"/evaluate", token, nil); ev["fired"] != true || ev["value"] != 1.0 {
		t.Fatalf("unknown_tool_calls rule: %v", ev)
	}
	if ev := a.must(200, "POST", "/v1/rules/"+loopRule+"/evaluate", token, nil); ev["fired"] != true || ev["value"] != 2.0 {
		t.Fatalf("repeated_calls rule: %v", ev)
	}
	// A rule filtered by error_kind counts that kind's errors only.
	kindRule := func(metric, kind string, threshold float64) string {
		return a.must(201, "POST", mcp+"/rules", token, map[string]any{"name": metric + " " + kind, "metric": metric, "error_kind": kind,
			"comparator": ">=", "threshold": threshold, "window_minutes": 30, "channels": []string{"in_app"}})["id"].(string)
	}
	refused := kindRule("errors", "invalid_params", 2)
	if ev := a.must(200, "POST", "/v1/rules/"+refused+"/evaluate", token, nil); ev["fired"] != true || ev["value"] != 2.0 {
		t.Errorf("errors of invalid_params: %v", ev)
	}
	timeouts := kindRule("error_rate", "timeout", 0.01)
	if ev := a.must(200, "POST", "/v1/rules/"+timeouts+"/evaluate", token, nil); ev["fired"] != false || ev["value"] != 0.0 {
		t.Errorf("error_rate of timeout: %v", ev)
	}
	if got := a.must(200, "GET", "/v1/rules/"+refused, token, nil)["error_kind"]; got != "invalid_params" {
		t.Errorf("rule error_kind %v", got)
	}
	if st, _ := a.do("POST", mcp+"/rules", token, map[string]any{"name": "x", "metric": "calls", "error_kind": "timeout",
		"comparator": ">", "threshold": 1, "window_minutes": 5, "channels": []string{"in_app"}}); st != 422 {
		t.Errorf("error_kind on calls: %d, want 422", st)
	}
	inbox := a.must(200, "GET", "/v1/account/inbox", token, nil)
	found := false
	for _, x := range inbox["items"].([]any) {
		found = found || x.(map[string]any)["rule_id"] == unknownRule
	}
	if !found {
		t.Errorf("inbox lacks the unknown_tool_calls rule: %v", inbox)
	}

	// A call of a tool the inventory does not list is unknown too, for the
	// rule as for the read.
	a.must(202, "POST", "/v1/ingest", key, map[string]any{"items": []map[string]any{item("s3", "delete_all", nil)}})
	eventually(t, 15*time.Second, func() error {
		ev := a.must(200, "POST", "/v1/rules/"+unknownRule+"/evaluate", token, nil)
		u := a.must(200, "GET", mcp+"/unknown-tools", token, nil)["items"].([]any)
		if ev["value"] != 2.0 || len(u) != 2 || u[1].(map[string]any)["name"] != "get_forcast" || u[0].(map[string]any)["name"] != "delete_all" {
			return fmt.Errorf("rule value %v, unknown tools %v; want 2 and delete_all, get_forcast", ev["value"], u)
		}
		return nil
	})
}
