package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestFailurePagesInABrowser: the overview shows error kinds and the
// unknown-tools table with the closest real name and its client; the tool
// page its kinds, refused arguments, answer sizes and repeats; the session
// timeline marks the repeats.
func TestFailurePagesInABrowser(t *testing.T) {
	t.Parallel()
	u := newBrowserUser(t, "fail", "Fay", "weather")
	a, base, token, mcpID, key := u.a, u.base, u.token, u.mcpID, u.key
	now := time.Now().UTC().Add(-time.Hour)
	ts := func(s int) string { return now.Add(time.Duration(s) * time.Second).Format(time.RFC3339Nano) }
	call := func(s int, session, name string, extra map[string]any) map[string]any {
		it := map[string]any{"timestamp": ts(s), "session_id": session, "method": "tools/call", "name": name, "client_name": "cursor"}
		for k, v := range extra {
			it[k] = v
		}
		return it
	}
	items := []map[string]any{
		call(1, "s-loop", "get_forecast", map[string]any{"args_hash": "k1.a", "response_bytes": 204800}),
		call(2, "s-loop", "get_forecast", map[string]any{"args_hash": "k1.a", "response_bytes": 204800}),
		call(3, "s-loop", "get_forecast", map[string]any{"args_hash": "k1.a", "response_bytes": 204800}),
		call(4, "s-2", "get_forcast", map[string]any{"error_kind": "unknown_tool", "error_message": "Tool get_forcast not found"}),
		call(5, "s-2", "get_forecast", map[string]any{"error_kind": "invalid_params", "error_message": "city: Required"}),
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != float64(len(items)) {
		t.Fatalf("ingest: %d %v", status, res)
	}
	eventually(t, 10*time.Second, func() error {
		// Every rollup the pages read (one insert's views land one after the other).
		_, o := a.do("GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
		_, u := a.do("GET", "/v1/mcps/"+mcpID+"/unknown-tools", token, nil)
		_, tool := a.do("GET", "/v1/mcps/"+mcpID+"/tools/get_forecast", token, nil)
		st, _ := a.do("GET", "/v1/mcps/"+mcpID+"/sessions/s-loop", token, nil)
		if l, _ := u["items"].([]any); num(o["calls"]) != 5 || len(l) != 1 || tool["response_bytes_max"] == nil || st != 200 {
			return fmt.Errorf("not readable yet: %v %v %v %d", o["calls"], u["items"], tool["response_bytes_max"], st)
		}
		return nil
	})
	b := newBrowser(t, base)
	defer b.checkConsole()
	b.logIn(u)
	b.do("overview", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/overview"), chromedp.WaitVisible(tid("failures")))
	b.waitFor("overview loaded", idle+` && document.querySelectorAll('[data-testid="unknown-tool"]').length === 1`)
	b.shot("failures-overview")
	if got := eval[string](b, "unknown", `document.querySelector('[data-testid="unknown-tool"]').textContent`); got != "get_forcastget_forecast11cursor (1)" {
		t.Errorf("unknown-tools row %q", got)
	}
	if got := eval[int](b, "kinds", `document.querySelectorAll('[data-testid="error-kinds-row"]').length`); got != 2 {
		t.Errorf("%d error kind rows, want 2", got)
	}
	if got := eval[string](b, "repeats", `document.querySelector('[data-testid="repeated-calls"]').textContent`); !strings.Contains(got, "2") {
		t.Errorf("repeated calls card %q", got)
	}

	b.do("tool", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/tools/get_forecast"), chromedp.WaitVisible(tid("tool-sizes")))
	b.waitFor("tool loaded", idle+` && document.querySelectorAll('[data-testid="tool-refusal"]').length === 1`)
	if got := eval[string](b, "refusal", `document.querySelector('[data-testid="tool-refusal"]').textContent`); got != "city: Required1" {
		t.Errorf("refusal row %q", got)
	}
	if got := eval[string](b, "max", `document.querySelector('[data-testid="tool-response-max"]').textContent`); !strings.Contains(got, "200.0 KB") {
		t.Errorf("largest answer %q", got)
	}

	b.do("timeline", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/sessions/s-loop"), chromedp.WaitVisible(tid("timeline")))
	b.waitFor("timeline loaded", idle+` && document.querySelectorAll('[data-testid="timeline-row"]').length === 3`)
	if got := eval[[]string](b, "repeats", `[...document.querySelectorAll('[data-testid="timeline-row"]')].map((r) => r.dataset.repeat)`); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("timeline repeats %v", got)
	}
}
