package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// The dashboard tests drive Debian's chromium through the DevTools
// protocol against the whole service (startMain) on the test databases.
// Screenshots of every page visited go to $TELEMETRY_SCREENSHOTS when set
// (to look at them after the run), else to the test's temporary directory.

// stepTimeout bounds one browser step, so a selector that never matches
// fails with the step's name instead of hanging the test binary.
const stepTimeout = 20 * time.Second

// chromiumPath finds the browser: skipped without one, except in CI, where
// `make test` installs it and a missing browser must not pass silently.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testenv.InCI() {
		t.Fatal("chromium not found (CI=true): install it with apt-get install chromium (scripts/test.sh does)")
	}
	t.Skip("chromium not found; install it (apt-get install chromium) to run the browser tests")
	return ""
}

var browserSlots = make(chan struct{}, 2)

// browser is one headless chromium tab on the service at base.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string

	mu       sync.Mutex
	n        int
	problems []string // uncaught exceptions and console errors
}

// newBrowser starts chromium with a fresh profile; it is closed, and its
// profile removed, when the test ends. The flags keep it off the network
// (the machine has none: without them it waits on Google hosts).
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	path := chromiumPath(t)
	// The package's tests run in parallel; at most two browsers at once
	// (rendering is the heaviest work of any test, and a step has
	// stepTimeout), held until the test ends.
	browserSlots <- struct{}{}
	t.Cleanup(func() { <-browserSlots }) // registered first: runs after the browser is closed
	shots := os.Getenv("TELEMETRY_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir() // made before the browser, so removed after it exits
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, base: base, shots: shots}
	// The first action starts the browser on the long-lived context: a step's
	// timeout context must not become the browser's lifetime.
	if err := chromedp.Listen(ctx, b.listen); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "exception: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		msg += fmt.Sprintf(" at %s:%d", d.URL, d.LineNumber)
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		msg = "console.error: " + strings.Join(parts, " ")
	default:
		return
	}
	b.mu.Lock()
	b.problems = append(b.problems, msg)
	b.mu.Unlock()
}

// checkConsole fails the test if a page threw or logged an error so far.
func (b *browser) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("page %s", p)
	}
	b.problems = nil
}

// tid selects by data-testid.
func tid(id string) chromedp.CSS { return chromedp.CSS(`[data-testid="` + id + `"]`) }

// setField sets an input's or select's value as a person would (input and
// change events fire, so listeners such as the threshold hint follow).
func setField(id, value string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => {
		const el = document.querySelector('[data-testid=%q]');
		if (!el) throw new Error('no element %s');
		el.value = %q;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
	})()`, id, id, value)
	return chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](js))
}

// do runs actions as one named step; on failure it saves a screenshot and
// stops the test.
func (b *browser) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(step, err)
	}
}

// fail saves what the page looked like and stops the test.
func (b *browser) fail(step string, err error) {
	b.t.Helper()
	b.shot("failed-" + step)
	loc, _ := chromedp.Run(b.ctx, chromedp.Location())
	b.checkConsole()
	b.t.Fatalf("%s (at %s): %v", step, loc, err)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, step, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail(step, err)
	}
	return v
}

// waitFor waits until a JavaScript expression is truthy.
func (b *browser) waitFor(step, expr string) {
	b.t.Helper()
	b.do(step, chromedp.Action[chromedp.Void](chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(stepTimeout-time.Second))))
}

// shot saves a full-page screenshot, numbered in the order taken.
func (b *browser) shot(name string) { b.capture(name, chromedp.FullScreenshot(100)) }

// screen saves what fits the viewport (long pages at phone width would
// make a full-page image too thin to look at).
func (b *browser) screen(name string) { b.capture(name, chromedp.CaptureScreenshot()) }

func (b *browser) capture(name string, action chromedp.Action[[]byte]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, action)
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.mu.Lock()
	b.n++
	file := filepath.Join(b.shots, fmt.Sprintf("%s-%02d-%s.png", strings.TrimPrefix(b.t.Name(), "TestDashboard"), b.n, name))
	b.mu.Unlock()
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// idle is a page with its data loaded: no section spinner, no request in flight.
const idle = `!document.querySelector('[data-testid="loading-block"]') && document.querySelector('[data-testid="loading"]')?.hidden !== false`

// noOverflow is true when the page does not scroll sideways.
const noOverflow = `document.documentElement.scrollWidth <= window.innerWidth`

// TestDashboardInABrowser walks a new user through the dashboard: sign up,
// an MCP and its key made in the UI, telemetry sent with that key, the
// figures on the overview, sessions over two pages, a rule fired with
// "Evaluate now", the inbox badge and marking the item read; then the API
// docs page, the / redirect and the phone layout.
func TestDashboardInABrowser(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // skip before starting the service
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	// Only "Evaluate now" fires the rule: the evaluator's own pass must not
	// race it, so that the click's answer is "fired".
	cfg.Alerting.EvaluateInterval = time.Hour
	_, base := startMain(t, cfg)
	b := newBrowser(t, base)
	defer b.checkConsole()

	// Sign up.
	email := fmt.Sprintf("ada-%d@example.com", time.Now().UnixNano())
	b.do("open signup",
		chromedp.Navigate(base+"/app/signup"),
		chromedp.WaitVisible(tid("signup-form")),
		chromedp.SendKeys(tid("signup-email"), email),
		chromedp.SendKeys(tid("signup-password"), "a long password"),
		chromedp.SendKeys(tid("signup-name"), "Ada"),
		chromedp.SendKeys(tid("signup-account-name"), "Ada's team"),
	)
	b.shot("signup")
	b.do("sign up",
		chromedp.Click(tid("signup-submit")),
		chromedp.WaitVisible(tid("mcp-create-form")),
	)
	b.waitFor("account name in header", `document.querySelector('[data-testid="account-name"]').textContent.includes("Ada's team")`)
	b.shot("mcps-empty")

	// An MCP and a key, made in the UI; the key is read from the page.
	b.do("create MCP",
		chromedp.SendKeys(tid("mcp-name"), "docs-search"),
		chromedp.SendKeys(tid("mcp-description"), "Searches the product docs"),
		chromedp.Click(tid("mcp-create-submit")),
		chromedp.WaitVisible(tid("key-create-form")),
	)
	loc := eval[string](b, "location", `location.pathname`)
	mcpID, ok := strings.CutSuffix(strings.TrimPrefix(loc, "/app/mcps/"), "/setup")
	if !ok || mcpID == "" || strings.Contains(mcpID, "/") {
		t.Fatalf("after creating the MCP the page is %s, want /app/mcps/{id}/setup", loc)
	}
	b.do("create key",
		chromedp.SendKeys(tid("key-name"), "production"),
		chromedp.Click(tid("key-create-submit")),
		chromedp.WaitVisible(tid("key-display")),
		chromedp.WaitVisible(tid("key-row")),
	)
	b.shot("setup-new-key")
	key := strings.TrimSpace(eval[string](b, "read key", `document.querySelector('[data-testid="key-display"]').textContent`))
	if !strings.HasPrefix(key, "ik_") {
		t.Fatalf("key shown %q, want an ik_ key", key)
	}
	if snippet := eval[string](b, "curl snippet", `document.querySelector('[data-testid="snippet-curl"]').textContent`); !strings.Contains(snippet, key) || !strings.Contains(snippet, base) {
		t.Errorf("curl snippet does not use the new key and this service's origin %s:\n%s", base, snippet)
	}
	for _, id := range []string{"snippet-typescript", "snippet-go", "snippet-openllmetry", "snippet-shinzo"} {
		snippet := eval[string](b, id, `document.querySelector('[data-testid="`+id+`"]').textContent`)
		if !strings.Contains(snippet, key) || !strings.Contains(snippet, base) {
			t.Errorf("%s does not use the new key and this service's origin %s:\n%s", id, base, snippet)
		}
	}

	// A batch through the API with that key: 60 sessions (more than the
	// sessions page's 50), 75 calls, 5 errors, all in the last 20 minutes.
	now := time.Now().UTC()
	var items []map[string]any
	for i := range 60 {
		sid := fmt.Sprintf("s-%02d", i)
		it := map[string]any{"id": fmt.Sprintf("a-%d", i), "timestamp": now.Add(-time.Duration(i) * 20 * time.Second).Format(time.RFC3339Nano),
			"session_id": sid, "method": "tools/call", "name": "search_docs", "duration_ms": 100 + i,
			"client_name": "claude-desktop", "client_version": "0.9.1", "user_id": fmt.Sprintf("u-%d", i%10)}
		if i < 5 {
			it["status"], it["error_type"] = "error", "TimeoutError"
		}
		items = append(items, it)
		if i < 15 {
			items = append(items, map[string]any{"id": fmt.Sprintf("b-%d", i), "timestamp": now.Add(-time.Duration(i)*20*time.Second - 5*time.Second).Format(time.RFC3339Nano),
				"session_id": sid, "method": "tools/call", "name": "fetch_page", "duration_ms": 40, "client_name": "cursor", "user_id": fmt.Sprintf("u-%d", i%10)})
		}
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != 75 {
		t.Fatalf("ingest: %d %v", status, res)
	}

	// Every read the pages below make has the whole batch (each rollup is
	// its own materialized view, filled one after the other): then the
	// overview shows the figures.
	token := eval[string](b, "session token", `JSON.parse(localStorage.getItem('mcpscope.session')).token`)
	waitIngested(t, api{t, base}, token, mcpID, 75)
	b.do("overview", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/overview"), chromedp.WaitVisible(tid("overview-calls")))
	b.waitFor("charts drawn", `document.querySelectorAll('[data-testid="chart-calls"] canvas, [data-testid="chart-p95"] canvas').length >= 2`)
	for id, want := range map[string]string{"overview-calls": "75", "overview-errors": "5", "overview-users": "10"} {
		if got := eval[string](b, id, `document.querySelector('[data-testid="`+id+`"]').dataset.value`); got != want {
			t.Errorf("%s data-value %q, want %q", id, got, want)
		}
	}
	// 60 sessions is past uniqHLL12's exact 16: an estimate, within 2 +
	// three standard errors (1.6% each) of 60, as the store tests allow.
	if got, err := strconv.Atoi(eval[string](b, "overview-sessions", `document.querySelector('[data-testid="overview-sessions"]').dataset.value`)); err != nil || got < 60-4 || got > 60+4 {
		t.Errorf("overview-sessions data-value %d (%v), want 60 within 4", got, err)
	}
	if got := strings.TrimSpace(eval[string](b, "calls text", `document.querySelector('[data-testid="overview-calls"]').textContent`)); got != "75" {
		t.Errorf("overview-calls reads %q, want 75", got)
	}
	b.shot("overview")

	// Tools: both tools listed.
	b.do("tools", chromedp.Click(tid("tab-tools")), chromedp.WaitVisible(tid("tools-table")))
	b.waitFor("tools rows", `document.querySelectorAll('[data-testid="tool-row"]').length === 2`)
	b.shot("tools")

	// Sessions: 50 on the first page, the other 10 on the next.
	rowIDs := `[...document.querySelectorAll('[data-testid="session-row"]')].map((r) => r.dataset.sessionId)`
	b.do("sessions", chromedp.Click(tid("tab-sessions")), chromedp.WaitVisible(tid("sessions-table")))
	b.waitFor("sessions page 1", idle+` && document.querySelector('[data-testid="sessions-page"]')?.textContent === 'Page 1'`)
	page1 := eval[[]string](b, "page 1 ids", rowIDs)
	b.shot("sessions-page-1")
	b.do("next page", chromedp.Click(tid("sessions-next")))
	b.waitFor("sessions page 2", idle+` && document.querySelector('[data-testid="sessions-page"]')?.textContent === 'Page 2'`)
	page2 := eval[[]string](b, "page 2 ids", rowIDs)
	b.shot("sessions-page-2")
	if len(page1) != 50 || len(page2) != 10 {
		t.Errorf("sessions pages of %d and %d rows, want 50 and 10", len(page1), len(page2))
	}
	// Newest first: s-00 started last, s-59 first.
	for i, id := range append(page1, page2...) {
		if want := fmt.Sprintf("s-%02d", i); id != want {
			t.Fatalf("session %d listed is %q, want %q (newest started first, each once)", i, id, want)
		}
	}
	if !eval[bool](b, "next disabled", `document.querySelector('[data-testid="sessions-next"]').disabled`) {
		t.Error("sessions-next is enabled on the last page")
	}

	// A rule made in the UI: calls > 0 over 60 minutes, in-app.
	b.do("new rule",
		chromedp.Click(tid("tab-alerts")),
		chromedp.WaitVisible(tid("rule-new")),
		chromedp.Click(tid("rule-new")),
		chromedp.WaitVisible(tid("rule-form")),
		chromedp.SendKeys(tid("rule-name"), "Any traffic"),
		setField("rule-metric", "calls"),
		setField("rule-comparator", ">"),
		setField("rule-threshold", "0"),
		setField("rule-window", "60"),
		setField("rule-min-calls", "1"),
		chromedp.Click(tid("rule-notify-on-resolve")),
	)
	if !eval[bool](b, "in_app checked", `document.querySelector('[data-testid="rule-channel-in_app"] input, input[data-testid="rule-channel-in_app"]').checked`) {
		t.Error("in-app is not the default channel of a new rule")
	}
	b.shot("rule-form")
	b.do("create rule", chromedp.Click(tid("rule-submit")), chromedp.WaitVisible(tid("rule-row")))
	if got := eval[string](b, "rule text", `document.querySelector('[data-testid="rule-row"]').textContent`); !strings.Contains(got, "Any traffic") || !strings.Contains(got, "Calls > 0 over 1 h") || !strings.Contains(got, "notifies on resolve") {
		t.Errorf("rule row reads %q", got)
	}
	if st := eval[string](b, "rule state", `document.querySelector('[data-testid="rule-row"] [data-testid="rule-state"]').textContent`); st != "ok" {
		t.Errorf("new rule state %q, want ok", st)
	}
	if c := eval[string](b, "badge before", `document.querySelector('[data-testid="inbox-badge"]').dataset.count`); c != "0" {
		t.Errorf("inbox badge %q before the rule fired", c)
	}

	// Evaluate now fires it; the inbox badge shows the in-app delivery.
	b.do("evaluate", chromedp.Click(tid("rule-evaluate")))
	b.waitFor("evaluation result", `document.querySelector('[data-testid="rule-evaluate-result"] [data-state]')`)
	res := eval[map[string]string](b, "result", `({...document.querySelector('[data-testid="rule-evaluate-result"] [data-state]').dataset})`)
	if res["state"] != "firing" || res["fired"] != "true" || res["value"] != "75" {
		t.Errorf("evaluate now: %v, want state firing, fired true, value 75", res)
	}
	if got := eval[string](b, "state cell", `document.querySelector('[data-testid="rule-row"] .rule-state-cell').textContent`); !strings.Contains(got, "firing") || !strings.Contains(got, "Last fired") {
		t.Errorf("state cell after firing reads %q", got)
	}
	b.waitFor("badge 1", `document.querySelector('[data-testid="inbox-badge"]').dataset.count === '1' && !document.querySelector('[data-testid="inbox-badge"]').hidden`)
	b.shot("rule-fired")

	// The inbox: one unread item; mark it read and the badge goes.
	b.do("inbox", chromedp.Click(tid("nav-inbox")), chromedp.WaitVisible(tid("inbox-item")))
	item := eval[map[string]string](b, "item", `({...document.querySelector('[data-testid="inbox-item"]').dataset})`)
	if item["read"] != "false" {
		t.Errorf("inbox item %v, want unread", item)
	}
	if got := eval[string](b, "item text", `document.querySelector('[data-testid="inbox-item"]').textContent`); !strings.Contains(got, "Any traffic") {
		t.Errorf("inbox item reads %q, want the rule's name", got)
	}
	b.shot("inbox-unread")
	b.do("mark read", chromedp.Click(tid("inbox-mark-read")))
	b.waitFor("item read", `document.querySelector('[data-testid="inbox-item"]').dataset.read === 'true'`)
	b.waitFor("badge 0", `document.querySelector('[data-testid="inbox-badge"]').dataset.count === '0' && document.querySelector('[data-testid="inbox-badge"]').hidden`)
	if v := eval[string](b, "unread count", `document.querySelector('[data-testid="inbox-unread-count"]').dataset.value`); v != "0" {
		t.Errorf("inbox-unread-count %q after marking read", v)
	}
	b.shot("inbox-read")
	// A reload asks the API again: still read.
	b.do("inbox reload", chromedp.Reload(), chromedp.WaitVisible(tid("inbox-item")))
	b.waitFor("badge still 0", idle+` && document.querySelector('[data-testid="inbox-item"]').dataset.read === 'true' && document.querySelector('[data-testid="inbox-badge"]').dataset.count === '0'`)

	// Snooze the firing rule for an hour from the rule list: the row says
	// so and offers to unsnooze; the API agrees.
	b.do("alerts again", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/alerts"), chromedp.WaitVisible(tid("rule-snooze-hour")))
	b.do("snooze an hour", chromedp.Click(tid("rule-snooze-hour")), chromedp.WaitVisible(tid("rule-unsnooze")))
	if got := eval[string](b, "snoozed cell", `document.querySelector('[data-testid="rule-row"] .rule-state-cell').textContent`); !strings.Contains(got, "snoozed") || !strings.Contains(got, "firing") {
		t.Errorf("state cell after snoozing reads %q", got)
	}
	b.shot("rule-snoozed")
	ruleID := eval[string](b, "rule id", `document.querySelector('[data-testid="rule-row"]').dataset.ruleId`)
	a := api{t, base}
	rule := a.must(200, "GET", "/v1/rules/"+ruleID, token, nil)
	if until, err := time.Parse(time.RFC3339, fmt.Sprint(rule["snoozed_until"])); err != nil || until.Before(time.Now().Add(50*time.Minute)) || until.After(time.Now().Add(70*time.Minute)) {
		t.Errorf("snoozed_until %v after snoozing an hour", rule["snoozed_until"])
	}
	// The rule's page: its history has the firing.
	b.do("rule page", chromedp.Click(tid("rule-link")), chromedp.WaitVisible(tid("rule-event")))
	if ev := eval[map[string]string](b, "event", `({...document.querySelector('[data-testid="rule-event"]').dataset})`); ev["kind"] != "fired" {
		t.Errorf("history event %v, want fired", ev)
	}
	if n := eval[int](b, "events", `document.querySelectorAll('[data-testid="rule-event"]').length`); n != 1 {
		t.Errorf("%d history events, want 1", n)
	}
	if !eval[bool](b, "snoozed note", `!!document.querySelector('[data-testid="rule-form-snoozed"]')`) ||
		!eval[bool](b, "notify kept", `document.querySelector('input[data-testid="rule-notify-on-resolve"]').checked`) {
		t.Error("the rule page does not show the snooze or the notify_on_resolve setting")
	}
	b.shot("rule-history")
	b.do("unsnooze", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/alerts"), chromedp.WaitVisible(tid("rule-unsnooze")),
		chromedp.Click(tid("rule-unsnooze")), chromedp.WaitVisible(tid("rule-snooze-day")))
	rule = a.must(200, "GET", "/v1/rules/"+ruleID, token, nil)
	if rule["snoozed_until"] != nil {
		t.Errorf("snoozed_until %v after unsnoozing", rule["snoozed_until"])
	}
	// The delivery log: the one in-app delivery; filtered to email, none.
	b.do("deliveries", chromedp.Click(tid("nav-deliveries")), chromedp.WaitVisible(tid("delivery-row")))
	if d := eval[map[string]string](b, "delivery", `({...document.querySelector('[data-testid="delivery-row"]').dataset})`); d["channel"] != "in_app" || d["status"] != "delivered" {
		t.Errorf("delivery row %v", d)
	}
	b.shot("deliveries")
	b.do("deliveries by email", setField("deliveries-channel", "email"))
	b.waitFor("email filter", `location.search.includes('channel=email') && document.querySelector('[data-testid="deliveries-table-empty"]') && !document.querySelector('[data-testid="delivery-row"]')`)

	// The other pages render without an error box.
	for _, p := range []struct{ name, path, ready string }{
		{"insights", "/app/mcps/" + mcpID + "/insights", "insights-slowest-tools-table"},
		{"tool", "/app/mcps/" + mcpID + "/tools/search_docs", "tool-error-types"},
		{"channels", "/app/channels", "channels-table"},
		{"members", "/app/members", "members-table"},
		{"usage", "/app/usage", "usage-events"},
		{"settings", "/app/settings", "account-form"},
		{"mcps", "/app/mcps", "mcp-list"},
	} {
		name := p.name
		b.do(name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(tid(p.ready)))
		b.waitFor(name+" loaded", idle)
		if n := eval[int](b, name+" problems", `document.querySelectorAll('[data-testid="problem"]').length`); n != 0 {
			t.Errorf("%s shows %d problem boxes: %s", p.path, n, eval[string](b, "problem", `document.querySelector('[data-testid="problem"]').textContent`))
		}
		b.shot(name)
	}

	b.do("insights", chromedp.Navigate(base+"/app/mcps/"+mcpID+"/insights"), chromedp.WaitVisible(tid("insights-clients-table")))
	for table, rows := range map[string]int{"slowest-tools": 2, "failing-tools": 1, "top-errors": 1, "clients": 2} {
		if n := eval[int](b, table, `document.querySelectorAll('[data-testid="insights-`+table+`-table"] [data-testid="insights-row"]').length`); n != rows {
			t.Errorf("insights %s: %d rows, want %d", table, n, rows)
		}
	}

	// GET / sends the browser to the dashboard.
	b.do("root", chromedp.Navigate(base+"/"))
	b.waitFor("root redirect", `location.pathname.startsWith('/app/') && document.querySelector('[data-testid="nav-inbox"]')`)

	// The API docs page lists the operations with nothing from outside.
	b.do("docs", chromedp.Navigate(base+"/docs"))
	b.waitFor("docs operations", `document.body.innerText.includes('Send a batch of telemetry items') && document.body.innerText.includes('Evaluate an alert rule now')`)
	if n := eval[int](b, "opblocks", `document.querySelectorAll('.opblock').length`); n < 20 {
		t.Errorf("docs page lists %d operations", n)
	}
	b.shot("docs")

	// Phone width: no sideways scrolling on the main pages, the menu opens.
	b.do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	for _, p := range []struct{ path, ready string }{
		{"/app/mcps/" + mcpID + "/overview", "overview-calls"},
		{"/app/mcps/" + mcpID + "/sessions", "sessions-table"},
		{"/app/mcps/" + mcpID + "/alerts", "rules-table"},
		{"/app/mcps/" + mcpID + "/setup", "keys-table"},
		{"/app/inbox", "inbox-list"},
	} {
		name := "phone-" + p.path[strings.LastIndex(p.path, "/")+1:]
		b.do(name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(tid(p.ready)))
		b.waitFor(name+" loaded", idle)
		if !eval[bool](b, name+" overflow", noOverflow) {
			t.Errorf("%s at 390 px scrolls sideways: %d px wide", p.path, eval[int](b, "width", `document.documentElement.scrollWidth`))
		}
		b.screen(name)
	}
	b.do("phone menu", chromedp.Click(tid("nav-toggle")), chromedp.WaitVisible(tid("nav-settings")))
	b.screen("phone-menu")
}

// waitIngested waits until every metric read of the MCP counts calls.
func waitIngested(t *testing.T, a api, token, mcpID string, calls float64) {
	t.Helper()
	sum := func(items any, key string) (n float64) {
		list, _ := items.([]any)
		for _, it := range list {
			m, _ := it.(map[string]any)
			n += num(m[key])
		}
		return n
	}
	eventually(t, 10*time.Second, func() error {
		reads := map[string]float64{}
		_, o := a.do("GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
		reads["overview"] = num(o["calls"])
		_, tl := a.do("GET", "/v1/mcps/"+mcpID+"/tools", token, nil)
		reads["tools"] = sum(tl["items"], "calls")
		_, se := a.do("GET", "/v1/mcps/"+mcpID+"/sessions?limit=200", token, nil)
		reads["sessions"] = sum(se["items"], "calls")
		_, in := a.do("GET", "/v1/mcps/"+mcpID+"/insights", token, nil)
		clients, _ := in["clients"].(map[string]any)
		reads["insights clients"] = sum(clients["items"], "calls")
		_, u := a.do("GET", "/v1/account/usage", token, nil)
		reads["usage"] = num(u["events"])
		for name, got := range reads {
			if got != calls {
				return fmt.Errorf("%s counts %v calls, want %v", name, got, calls)
			}
		}
		return nil
	})
}

// TestDashboardShowsAPIErrors checks that a problem from the API reaches
// the page in words next to the field it is about, and that a wrong
// password on the login page is explained, never a blank page.
func TestDashboardShowsAPIErrors(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	email := fmt.Sprintf("eve-%d@example.com", time.Now().UnixNano())
	a.must(201, "POST", "/v1/auth/signup", "", map[string]any{"email": email, "password": "a long password", "name": "Eve"})
	b := newBrowser(t, base)
	defer b.checkConsole()

	// A deep link without a session goes to the login page and back.
	b.do("deep link", chromedp.Navigate(base+"/app/inbox"), chromedp.WaitVisible(tid("login-form")))
	b.do("wrong password",
		chromedp.SendKeys(tid("login-email"), email),
		chromedp.SendKeys(tid("login-password"), "not the password"),
		chromedp.Click(tid("login-submit")),
	)
	b.waitFor("login problem", `document.querySelector('[data-testid="login-error"] [data-testid="problem"]')`)
	if code := eval[string](b, "code", `document.querySelector('[data-testid="login-error"] [data-testid="problem"]').dataset.code`); code != "invalid_credentials" {
		t.Errorf("login problem code %q", code)
	}
	b.shot("login-wrong-password")
	b.do("log in",
		setField("login-password", ""),
		chromedp.SendKeys(tid("login-password"), "a long password"),
		chromedp.Click(tid("login-submit")),
		chromedp.WaitVisible(tid("inbox-empty")),
	)

	// A rule the API refuses (error rate above 1): the detail shows under
	// the threshold input.
	b.do("create MCP", chromedp.Navigate(base+"/app/mcps"), chromedp.WaitVisible(tid("mcp-create-form")),
		chromedp.SendKeys(tid("mcp-name"), "m"), chromedp.Click(tid("mcp-create-submit")), chromedp.WaitVisible(tid("key-create-form")))
	b.do("bad rule",
		chromedp.Click(tid("tab-alerts")),
		chromedp.WaitVisible(tid("rule-new")),
		chromedp.Click(tid("rule-new")),
		chromedp.WaitVisible(tid("rule-form")),
		chromedp.SendKeys(tid("rule-name"), "Too high"),
		setField("rule-metric", "error_rate"),
		setField("rule-threshold", "5"),
		chromedp.Click(tid("rule-submit")),
	)
	b.waitFor("field error", `document.querySelector('[data-testid="field-error"][data-field="threshold"]')?.textContent`)
	b.shot("rule-form-error")
	if loc := eval[string](b, "still on form", `location.pathname`); !strings.HasSuffix(loc, "/alerts/new") {
		t.Errorf("after a refused rule the page is %s", loc)
	}
	if !slices.Contains([]string{"threshold"}, eval[string](b, "field", `document.querySelector('[data-testid="field-error"]').dataset.field`)) {
		t.Error("the first field error is not the threshold's")
	}
}

// browserUser is a new user with one MCP and an ingest key, on a service
// started for one browser test (evaluator passes an hour apart).
type browserUser struct {
	a                              api
	base, email, token, mcpID, key string
}

func newBrowserUser(t *testing.T, prefix, name, mcpName string) browserUser {
	t.Helper()
	chromiumPath(t)
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Alerting.EvaluateInterval = time.Hour
	_, base := startMain(t, cfg)
	u := browserUser{a: api{t, base}, base: base, email: fmt.Sprintf("%s-%d@example.com", prefix, time.Now().UnixNano())}
	u.token = u.a.must(201, "POST", "/v1/auth/signup", "", map[string]any{"email": u.email, "password": "a long password", "name": name})["token"].(string)
	u.mcpID = u.a.must(201, "POST", "/v1/mcps", u.token, map[string]any{"name": mcpName})["id"].(string)
	u.key = u.a.must(201, "POST", "/v1/mcps/"+u.mcpID+"/keys", u.token, map[string]any{"name": "k"})["key"].(string)
	return u
}

// logIn logs u in through the login page.
func (b *browser) logIn(u browserUser) {
	b.t.Helper()
	b.do("log in",
		chromedp.Navigate(u.base+"/app/login"),
		chromedp.WaitVisible(tid("login-form")),
		chromedp.SendKeys(tid("login-email"), u.email),
		chromedp.SendKeys(tid("login-password"), "a long password"),
		chromedp.Click(tid("login-submit")),
		chromedp.WaitVisible(tid("nav-mcps")),
	)
}
