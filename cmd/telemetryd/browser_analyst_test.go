package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAnalystPagesInABrowser: a user opens a session from the sessions list
// and sees its calls in order (the waterfall, errors marked), then breaks
// the overview down by client version with the selector; deltas against
// the previous period are on the figure cards, and a range of two days
// gets hourly charts.
func TestAnalystPagesInABrowser(t *testing.T) {
	t.Parallel()
	u := newBrowserUser(t, "ana", "Ana", "docs")
	a, base, token, mcpID, key := u.a, u.base, u.token, u.mcpID, u.key

	now := time.Now().UTC().Add(-time.Hour)
	session := "s/1 é"
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	items := []map[string]any{
		{"timestamp": ts(0), "session_id": session, "method": "initialize", "duration_ms": 3, "client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1"},
		{"timestamp": ts(2 * time.Second), "session_id": session, "method": "tools/call", "name": "search_docs", "duration_ms": 800, "client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1"},
		{"timestamp": ts(4 * time.Second), "session_id": session, "method": "tools/call", "name": "fetch_page", "duration_ms": 1500,
			"error_type": "TimeoutError", "error_message": "upstream timed out", "client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1"},
		{"timestamp": ts(10 * time.Second), "session_id": "s-2", "method": "tools/call", "name": "search_docs", "duration_ms": 90, "client_name": "cursor", "client_version": "1.2.0"},
		{"timestamp": ts(11 * time.Second), "session_id": "s-2", "method": "tools/call", "name": "search_docs", "duration_ms": 95, "client_name": "cursor", "client_version": "1.2.0"},
		// The previous period: one call eight days ago.
		{"timestamp": now.AddDate(0, 0, -8).Format(time.RFC3339Nano), "session_id": "s-old", "method": "tools/call", "name": "search_docs", "client_name": "claude-desktop", "client_version": "0.9.0"},
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != float64(len(items)) {
		t.Fatalf("ingest: %d %v", status, res)
	}
	eventually(t, 10*time.Second, func() error {
		_, b := a.do("GET", "/v1/mcps/"+mcpID+"/breakdown?by=client_version", token, nil)
		_, s := a.do("GET", "/v1/mcps/"+mcpID+"/sessions/"+url.PathEscape(session), token, nil)
		_, o := a.do("GET", "/v1/mcps/"+mcpID+"/overview?compare=previous", token, nil)
		if l, _ := b["items"].([]any); len(l) != 2 || num(s["calls"]) != 3 || num(o["calls"]) != 5 {
			return fmt.Errorf("not readable yet: %v %v %v", b["items"], s["calls"], o["calls"])
		}
		if p, _ := o["previous"].(map[string]any); num(p["calls"]) != 1 {
			return fmt.Errorf("previous not readable yet: %v", o["previous"])
		}
		return nil
	})

	b := newBrowser(t, base)
	defer b.checkConsole()
	b.logIn(u)

	// Sessions list → the session's timeline.
	b.do("sessions", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/sessions"), chromedp.WaitVisible(tid("sessions-table")))
	b.waitFor("sessions loaded", idle)
	b.do("open session", chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="session-row"][data-session-id="s/1 é"] [data-testid="session-link"]').click()`)))
	b.waitFor("timeline", idle+` && document.querySelectorAll('[data-testid="timeline-row"]').length === 3`)
	b.shot("session-timeline")
	if loc := eval[string](b, "location", `location.pathname`); loc != "/app/mcps/"+mcpID+"/sessions/"+url.PathEscape(session) {
		t.Errorf("timeline page at %s", loc)
	}
	rows := eval[[]map[string]string](b, "timeline rows", `[...document.querySelectorAll('[data-testid="timeline-row"]')].map((r) => ({...r.dataset}))`)
	wantRows := [][3]string{{"initialize", "", "ok"}, {"tools/call", "search_docs", "ok"}, {"tools/call", "fetch_page", "error"}}
	for i, w := range wantRows {
		if i >= len(rows) || rows[i]["method"] != w[0] || rows[i]["name"] != w[1] || rows[i]["status"] != w[2] {
			t.Errorf("timeline row %d = %v, want %v (oldest first)", i, rows, w)
			break
		}
	}
	if got := eval[string](b, "error text", `document.querySelector('[data-testid="timeline-error"]').textContent`); got != "TimeoutError: upstream timed out" {
		t.Errorf("error row reads %q", got)
	}
	for id, want := range map[string]string{"timeline-calls": "3", "timeline-errors": "1", "timeline-client": "claude-desktop"} {
		if got := eval[string](b, id, `document.querySelector('[data-testid="`+id+`"]').dataset.value`); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	if eval[bool](b, "no more", `!document.querySelector('[data-testid="timeline-more"]').hidden`) {
		t.Error("Load more shown for a session of one page")
	}

	// Overview: deltas, and the breakdown selector (client name by default,
	// then client version).
	b.do("overview", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/overview"), chromedp.WaitVisible(tid("overview-calls")))
	b.waitFor("breakdown ready", idle+` && document.querySelector('[data-testid="breakdown-body"]')?.dataset.state === 'ready'`)
	if got := eval[string](b, "calls delta", `document.querySelector('[data-testid="overview-calls-delta"]')?.textContent || ''`); !strings.HasPrefix(got, "+400%") {
		t.Errorf("calls delta reads %q, want +400%% (5 calls against 1)", got)
	}
	breakdownRows := `[...document.querySelectorAll('[data-testid="breakdown-row"]')].map((r) => r.dataset.value + '=' + r.dataset.calls)`
	if got := eval[[]string](b, "by client", breakdownRows); strings.Join(got, ",") != "claude-desktop=3,cursor=2" {
		t.Errorf("breakdown by client: %v", got)
	}
	b.do("by version", setField("breakdown-by", "client_version"))
	b.waitFor("by version ready", `document.querySelector('[data-testid="breakdown-body"]').dataset.by === 'client_version' && document.querySelector('[data-testid="breakdown-body"]').dataset.state === 'ready'`)
	if got := eval[[]string](b, "by version", breakdownRows); strings.Join(got, ",") != "0.9.1=3,1.2.0=2" {
		t.Errorf("breakdown by client version: %v", got)
	}
	if n := eval[int](b, "bars", `document.querySelectorAll('[data-testid="breakdown-bars"] .bar-row').length`); n != 2 {
		t.Errorf("%d bars", n)
	}
	if q := eval[string](b, "url", `location.search`); !strings.Contains(q, "by=client_version") {
		t.Errorf("the dimension is not in the URL: %q", q)
	}
	b.shot("overview-breakdown")

	// Two days: hourly charts.
	today := time.Now().UTC().Format("2006-01-02")
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
	b.do("two days", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/overview?from="+yesterday+"&to="+today), chromedp.WaitVisible(tid("overview-calls")))
	b.waitFor("hourly chart", idle+` && document.querySelector('[data-testid="chart-calls"]')?.dataset.granularity === 'hour'`)
	if n := eval[int](b, "hour rows", `document.querySelectorAll('[data-testid="chart-calls"] .chart-data tbody tr').length`); n != 48 {
		t.Errorf("hourly chart table of %d rows, want 48", n)
	}

	// A tool page breaks its own calls down.
	b.do("tool", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/tools/search_docs"), chromedp.WaitVisible(tid("tool-calls")))
	b.waitFor("tool breakdown", idle+` && document.querySelector('[data-testid="breakdown-body"]')?.dataset.state === 'ready'`)
	if got := eval[[]string](b, "tool by version", breakdownRows); strings.Join(got, ",") != "1.2.0=2,0.9.1=1" {
		t.Errorf("search_docs by client version: %v", got)
	}
	b.shot("tool-breakdown")
}
