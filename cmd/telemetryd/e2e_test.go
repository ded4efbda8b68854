package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

func postIngest(t *testing.T, base, key string, items []map[string]any, gz bool) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"items": items})
	req, _ := http.NewRequest("POST", base+"/v1/ingest", nil)
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
		body = b.Bytes()
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Body = http.NoBody
	req, _ = http.NewRequest("POST", base+"/v1/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// TestIngestAndReadBackThroughTheAPI ingests a known data set over HTTP,
// items on both sides of UTC midnight included, and checks the figures of
// every metric read.
func TestIngestAndReadBackThroughTheAPI(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcp, key := a.newTenant("ada")
	tokenB, mcpB, _ := a.newTenant("bob")

	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.AddDate(0, 0, -1)
	ts := func(tm time.Time) string { return tm.Format(time.RFC3339Nano) }
	unicodeTool := "搜索/docs 🚀"
	items := []map[string]any{
		{"id": "i1", "timestamp": ts(today.Add(-time.Millisecond)), "session_id": "s1", "method": "tools/call", "name": "search",
			"duration_ms": 100, "user_id": "u1", "client_name": "claude", "client_version": "1.0"},
		{"id": "i2", "timestamp": ts(today), "session_id": "s1", "method": "tools/call", "name": "search", "duration_ms": 300,
			"user_id": "u1", "error_type": "TimeoutError", "error_message": "timed out", "client_name": "claude", "client_version": "1.0"},
		{"id": "i3", "timestamp": ts(today.Add(time.Second)), "session_id": "s2", "method": "tools/call", "name": unicodeTool,
			"duration_ms": 50, "client_name": "cursor", "client_version": "2.0", "future_field": true},
		{"id": "i4", "timestamp": ts(today.Add(2 * time.Second)), "session_id": "s3", "method": "resources/read", "name": "file:///a", "user_id": "u2"},
		{"id": "i5", "timestamp": ts(today.Add(3 * time.Second)), "session_id": "s2", "method": "initialize", "duration_ms": 5},
		// Invalid: a session id over 128 characters, bad status, tools/call
		// without a name, too old.
		{"timestamp": ts(today), "session_id": strings.Repeat("s", 129), "method": "tools/call", "name": "x"},
		{"timestamp": ts(today), "session_id": "s", "method": "ping", "status": "maybe"},
		{"timestamp": ts(today), "session_id": "s", "method": "tools/call"},
		{"timestamp": ts(today.AddDate(0, 0, -40)), "session_id": "s", "method": "ping"},
	}
	status, res := postIngest(t, base, key, items, true)
	if status != 202 || num(res["accepted"]) != 5 || num(res["dropped"]) != 4 {
		t.Fatalf("ingest: %d %v", status, res)
	}
	// A retried batch never double counts.
	status, res = postIngest(t, base, key, items[:2], false)
	if status != 202 || num(res["accepted"]) != 0 || num(res["dropped"]) != 2 {
		t.Fatalf("retry: %d %v", status, res)
	}

	rng := "?from=" + yesterday.Format(time.DateOnly) + "&to=" + today.Format(time.DateOnly)
	// Readable within 5 s: every rollup is written by the same insert, but
	// ClickHouse runs the views in parallel, so wait for each read.
	var ov map[string]any
	eventually(t, 5*time.Second, func() error {
		ov = a.must(200, "GET", "/v1/mcps/"+mcp+"/overview"+rng, token, nil)
		tl := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools"+rng, token, nil)["items"].([]any)
		ss := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions"+rng, token, nil)["items"].([]any)
		if num(ov["calls"]) != 5 || len(tl) != 2 || len(ss) != 3 {
			return fmt.Errorf("within 5 s of the 202: overview calls %v, %d tools, %d sessions; want 5, 2, 3", ov["calls"], len(tl), len(ss))
		}
		return nil
	})
	want := map[string]float64{"calls": 5, "errors": 1, "error_rate": 0.2, "sessions": 3, "users": 3, "avg_ms": 113.75}
	for k, v := range want {
		if math.Abs(num(ov[k])-v) > 1e-9 {
			t.Errorf("overview %s = %v, want %v", k, ov[k], v)
		}
	}
	if ov["mcp_id"] != mcp || ov["from"] != yesterday.Format(time.DateOnly) || ov["p95_ms"] == nil || ov["nightly_as_of"] != nil {
		t.Errorf("overview: %v", ov)
	}
	series := ov["series"].([]any)
	if len(series) != 2 {
		t.Fatalf("series %v", series)
	}
	y, d := series[0].(map[string]any), series[1].(map[string]any)
	if y["date"] != yesterday.Format(time.DateOnly) || num(y["calls"]) != 1 || num(y["sessions"]) != 1 || num(d["calls"]) != 4 || num(d["errors"]) != 1 || num(d["users"]) != 3 {
		t.Errorf("series across midnight: %v", series)
	}
	only := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview?from="+yesterday.Format(time.DateOnly)+"&to="+yesterday.Format(time.DateOnly), token, nil)
	if num(only["calls"]) != 1 {
		t.Errorf("23:59:59.999 belongs to its day: %v", only["calls"])
	}

	tools := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools"+rng, token, nil)["items"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools %v", tools)
	}
	first := tools[0].(map[string]any)
	if first["name"] != "search" || num(first["calls"]) != 2 || num(first["errors"]) != 1 || num(first["error_rate"]) != 0.5 || num(first["avg_ms"]) != 200 || num(first["sessions"]) != 1 {
		t.Errorf("tool search: %v", first)
	}
	if tools[1].(map[string]any)["name"] != unicodeTool {
		t.Errorf("unicode tool name changed: %q", tools[1].(map[string]any)["name"])
	}
	detail := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools/"+url.PathEscape(unicodeTool)+rng, token, nil)
	if detail["name"] != unicodeTool || num(detail["calls"]) != 1 {
		t.Errorf("tool detail: %v", detail)
	}
	if cl := detail["clients"].([]any); len(cl) != 1 || cl[0].(map[string]any)["client_name"] != "cursor" {
		t.Errorf("tool clients: %v", detail["clients"])
	}
	search := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools/search"+rng, token, nil)
	et := search["error_types"].([]any)
	if len(et) != 1 || et[0].(map[string]any)["error_type"] != "TimeoutError" || et[0].(map[string]any)["last_message"] != "timed out" {
		t.Errorf("error types: %v", et)
	}
	none := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools/nothing"+rng, token, nil)
	if num(none["calls"]) != 0 || none["p95_ms"] != nil || len(none["series"].([]any)) != 2 {
		t.Errorf("a tool without data is zeros: %v", none)
	}

	// Sessions, two per page: s3, s2, then s1.
	page := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions"+rng+"&limit=2", token, nil)
	got := []string{}
	for {
		for _, it := range page["items"].([]any) {
			got = append(got, it.(map[string]any)["session_id"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		page = a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions"+rng+"&limit=2&cursor="+url.QueryEscape(next), token, nil)
	}
	if fmt.Sprint(got) != "[s3 s2 s1]" {
		t.Errorf("sessions %v, want [s3 s2 s1]", got)
	}

	ins := a.must(200, "GET", "/v1/mcps/"+mcp+"/insights"+rng, token, nil)
	if top := ins["top_errors"].(map[string]any)["items"].([]any); len(top) != 1 || top[0].(map[string]any)["name"] != "search" {
		t.Errorf("insights top errors: %v", ins["top_errors"])
	}
	usage := a.must(200, "GET", "/v1/account/usage"+rng, token, nil)
	if num(usage["events"]) != 5 || num(usage["limits"].(map[string]any)["max_batch_items"]) != 1000 {
		t.Errorf("usage: %v", usage)
	}

	// Isolation: the other tenant sees nothing of A, and its own MCP is empty.
	if st, p := a.do("GET", "/v1/mcps/"+mcp+"/overview", tokenB, nil); st != 404 || p["code"] != "not_found" {
		t.Errorf("B reading A's MCP: %d %v", st, p)
	}
	if ovB := a.must(200, "GET", "/v1/mcps/"+mcpB+"/overview"+rng, tokenB, nil); num(ovB["calls"]) != 0 {
		t.Errorf("B's overview leaks: %v", ovB["calls"])
	}

	// Date validation.
	for _, c := range []struct {
		q      string
		status int
		code   string
	}{
		{"?from=2026-13-01", 400, "invalid_date"},
		{"?from=2026-11-20&to=2026-11-19", 422, "invalid_range"},
		{"?from=2020-01-01&to=2026-11-19", 422, "range_too_large"},
	} {
		if st, p := a.do("GET", "/v1/mcps/"+mcp+"/overview"+c.q, token, nil); st != c.status || p["code"] != c.code {
			t.Errorf("%s: %d %v", c.q, st, p)
		}
	}
}

// TestHealthSeesClickHouseGoDown stops the service's own ClickHouse and
// expects /health to say so, then recover.
func TestHealthSeesClickHouseGoDown(t *testing.T) {
	t.Parallel()
	own := testenv.OwnClickHouse(t)
	_, base := startMain(t, testConfig(t, own.Addr))
	a := api{t, base}
	if h := a.must(200, "GET", "/health", "", nil); h["status"] != "ok" {
		t.Fatalf("health %v", h)
	}
	own.Stop(t)
	h := a.must(503, "GET", "/health", "", nil)
	checks := h["checks"].(map[string]any)
	if h["status"] != "degraded" || checks["clickhouse"] != "unavailable" || checks["postgres"] != "ok" {
		t.Fatalf("health with ClickHouse down: %v", h)
	}
	own.Start(t)
	eventually(t, 30*time.Second, func() error {
		if st, h := a.do("GET", "/health", "", nil); st != 200 {
			return fmt.Errorf("health after restart: %d %v", st, h)
		}
		return nil
	})
}
