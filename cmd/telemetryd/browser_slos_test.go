package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpscope/telemetry/analytics"
)

// TestLatencySLOFormInABrowser: the SLOs tab's form creates a latency SLO
// ("99% of search calls answer within 300 ms"), its threshold picked from
// the ladder the API accepts; with a fifth of the last minutes' search
// calls taking 2 s the SLO page and the list show the threshold, an SLI of
// 80% and the state page. A threshold off the ladder (an option the page
// does not offer, as a stale page could send) comes back as the API's 422
// under the threshold field, and no SLO is created.
func TestLatencySLOFormInABrowser(t *testing.T) {
	t.Parallel()
	u := newBrowserUser(t, "slo", "Sam", "docs")
	a, base, token, mcpID, key := u.a, u.base, u.token, u.mcpID, u.key
	start := time.Now().UTC().Add(-3 * time.Minute)
	var items []map[string]any
	for i := range 100 {
		d := 100
		if i%5 == 0 {
			d = 2000 // over the 300 ms threshold
		}
		items = append(items, map[string]any{"session_id": "s", "method": "tools/call", "name": "search", "duration_ms": d,
			"timestamp": start.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)})
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != 100 {
		t.Fatalf("ingest: %d %v", status, res)
	}
	waitIngested(t, a, token, mcpID, 100)

	b := newBrowser(t, base)
	defer b.checkConsole()
	b.logIn(u)
	b.do("SLOs tab", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/slos"), chromedp.WaitVisible(tid("slo-form")))
	ladder := make([]string, len(analytics.LatencyLadderMs))
	for i, ms := range analytics.LatencyLadderMs {
		ladder[i] = strconv.FormatFloat(ms, 'f', -1, 64)
	}
	if got := eval[string](b, "ladder", `[...document.querySelector('[data-testid="slo-threshold"]').options].map((o) => o.value).join(',')`); got != strings.Join(ladder, ",") {
		t.Errorf("threshold options %s, want the API's ladder %s", got, strings.Join(ladder, ","))
	}
	b.do("create latency SLO",
		chromedp.SendKeys(tid("slo-name"), "Search answers fast"),
		setField("slo-kind", "latency"),
		setField("slo-threshold", "300"),
		setField("slo-objective", "99"),
		chromedp.SendKeys(tid("slo-tool"), "search"),
		chromedp.Click(tid("slo-create")),
		chromedp.WaitVisible(tid("slo-title")),
	)
	b.waitFor("SLO page", idle+` && document.querySelector('[data-testid="slo-sli"]')`)
	b.shot("slo-latency-page")
	for _, c := range []struct{ what, expr, want string }{
		{"title", `document.querySelector('[data-testid="slo-title"]').textContent`, "Search answers fast"},
		{"objective", `document.querySelector('[data-testid="slo-objective-text"]').textContent`, "99% of search calls answer within 300 ms over 28 days"},
		{"state", `document.querySelector('[data-testid="slo-state"]').textContent`, "page"},
		{"budget", `document.querySelector('[data-testid="slo-budget-left"]').textContent`, "spent"},
		{"SLI", `document.querySelector('[data-testid="slo-sli"]').textContent`, "80"},
	} {
		if got := eval[string](b, c.what, c.expr); !strings.Contains(got, c.want) {
			t.Errorf("SLO page %s %q, want %q in it", c.what, got, c.want)
		}
	}
	// What the page shows is what the API stored.
	list := a.must(200, "GET", "/v1/mcps/"+mcpID+"/slos", token, nil)["items"].([]any)
	if len(list) != 1 {
		t.Fatalf("SLOs %v", list)
	}
	s := list[0].(map[string]any)
	if s["kind"] != "latency" || num(s["threshold_ms"]) != 300 || num(s["objective"]) != 0.99 || s["tool"] != "search" || s["state"] != "page" {
		t.Errorf("stored SLO %v", s)
	}

	b.do("list", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/slos"), chromedp.WaitVisible(tid("slo-form")))
	b.waitFor("SLO listed", idle+` && document.querySelectorAll('[data-testid="slo-row"]').length === 1`)
	row := eval[string](b, "row", `document.querySelector('[data-testid="slo-row"]').textContent`)
	for _, want := range []string{"Search answers fast", "answer within 300 ms", "page", "spent"} {
		if !strings.Contains(row, want) {
			t.Errorf("SLO row %q lacks %q", row, want)
		}
	}

	b.do("off-ladder threshold",
		chromedp.SendKeys(tid("slo-name"), "Off the ladder"),
		setField("slo-kind", "latency"),
		chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](`(() => {
			const s = document.querySelector('[data-testid="slo-threshold"]');
			s.add(new Option('250 ms', '250'));
			s.value = '250';
		})()`)),
		chromedp.Click(tid("slo-create")),
	)
	b.waitFor("threshold error", `document.querySelector('[data-testid="field-error"][data-field="threshold_ms"]')?.textContent`)
	b.shot("slo-threshold-error")
	msg := eval[string](b, "message", `document.querySelector('[data-testid="field-error"][data-field="threshold_ms"]').textContent`)
	if !strings.Contains(msg, "300") || !strings.Contains(msg, "500") {
		t.Errorf("threshold error %q does not list the ladder", msg)
	}
	if loc := eval[string](b, "still on form", `location.pathname`); !strings.HasSuffix(loc, "/slos") {
		t.Errorf("after a refused SLO the page is %s", loc)
	}
	if n := len(a.must(200, "GET", "/v1/mcps/"+mcpID+"/slos", token, nil)["items"].([]any)); n != 1 {
		t.Errorf("%d SLOs after the refused one, want 1", n)
	}
}
