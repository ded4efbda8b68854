package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestReleasePagesInABrowser: 1.0.0 then 1.1.0 of an MCP, search failing
// a fifth of the time in 1.1.0: the releases page lists both, compares
// them as worse with the CI verdict fail, and the overview's charts mark
// both releases.
func TestReleasePagesInABrowser(t *testing.T) {
	t.Parallel()
	u := newBrowserUser(t, "rel", "Rel", "docs")
	a, base, token, mcpID, key := u.a, u.base, u.token, u.mcpID, u.key
	start := time.Now().UTC().Add(-2 * time.Hour)
	var items []map[string]any
	for i := range 220 {
		version, at := "1.0.0", start.Add(time.Duration(i)*time.Second)
		it := map[string]any{"session_id": "s", "method": "tools/call", "name": "search", "duration_ms": 10}
		if i >= 110 {
			version, at = "1.1.0", start.Add(time.Hour+time.Duration(i)*time.Second)
			if i%5 == 0 {
				it["error_kind"], it["error_message"] = "tool_error", "index offline"
			}
		}
		it["server_version"], it["timestamp"] = version, at.Format(time.RFC3339Nano)
		items = append(items, it)
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != 220 {
		t.Fatalf("ingest: %d %v", status, res)
	}
	eventually(t, 10*time.Second, func() error {
		_, o := a.do("GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
		_, l := a.do("GET", "/v1/mcps/"+mcpID+"/releases", token, nil)
		if r, _ := l["items"].([]any); num(o["calls"]) != 220 || len(r) != 2 || num(r[0].(map[string]any)["calls"]) != 110 {
			return fmt.Errorf("not readable yet: %v %v", o["calls"], l["items"])
		}
		return nil
	})
	b := newBrowser(t, base)
	defer b.checkConsole()
	b.logIn(u)
	b.do("releases", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/releases"), chromedp.WaitVisible(tid("release-verdict")))
	b.waitFor("releases loaded", idle+` && document.querySelectorAll('[data-testid="release-row"]').length === 2`)
	b.shot("releases")
	if got := eval[string](b, "verdict", `document.querySelector('[data-testid="release-verdict"]').textContent`); got != "worse" {
		t.Errorf("verdict %q, want worse", got)
	}
	if got := eval[string](b, "ci verdict", `document.querySelector('[data-testid="release-ci-verdict"]').textContent`); got != "fail" {
		t.Errorf("CI verdict %q, want fail", got)
	}
	if got := eval[string](b, "tool", `document.querySelector('[data-testid="release-tool-row"]').textContent`); !strings.Contains(got, "error_rate_up") {
		t.Errorf("tool row %q", got)
	}
	b.do("overview", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/overview"), chromedp.WaitVisible(tid("chart-calls-releases")))
	if got := eval[string](b, "markers", `document.querySelector('[data-testid="chart-calls-releases"]').textContent`); !strings.Contains(got, "1.0.0") || !strings.Contains(got, "1.1.0") {
		t.Errorf("release markers %q", got)
	}
}
