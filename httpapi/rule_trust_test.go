package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// The new rule fields are validated like the others: 422 with the field's
// location, never a 5xx, on create and on PATCH.
func TestRuleFieldValidation(t *testing.T) {
	t.Parallel()
	s, _ := alertingServer(t)
	tm := newAPITeam(t, s)
	base := `"name":"r","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]`
	for _, tc := range []struct{ body, location string }{
		{`"metric":"p999_ms"`, "body.metric"},
		{`"min_calls":-1`, "body.min_calls"},
		{`"min_calls":1.5`, "body.min_calls"},
		{`"min_calls":"ten"`, "body.min_calls"},
		{`"min_calls":1000000001`, "body.min_calls"},
		{`"baseline":"day_ago"`, "body.baseline"},
		{`"baseline":7`, "body.baseline"},
		{`"snoozed_until":"tomorrow"`, "body.snoozed_until"},
		{`"snoozed_until":"2026-13-01T00:00:00Z"`, "body.snoozed_until"},
		{`"notify_on_resolve":"yes"`, "body.notify_on_resolve"},
	} {
		body := "{" + base + "," + tc.body + "}"
		if strings.Contains(tc.body, `"metric"`) {
			body = "{" + strings.Replace(base, `"metric":"errors"`, tc.body, 1) + "}"
		}
		m := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, body, 422, "")
		if errs, _ := m["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["location"] != tc.location {
			t.Errorf("create with %s: %v, want location %s", tc.body, m, tc.location)
		}
	}
	r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner,
		`{`+base+`,"metric":"p99_ms","min_calls":20,"baseline":null,"snoozed_until":null,"notify_on_resolve":true}`, 201, "")
	if r["metric"] != "p99_ms" || r["min_calls"] != 20.0 || r["baseline"] != nil || r["snoozed_until"] != nil || r["notify_on_resolve"] != true {
		t.Fatalf("created %v", r)
	}
	id := r["id"].(string)
	for _, tc := range []struct{ body, location string }{
		{`{"min_calls":-5}`, "body.min_calls"},
		{`{"baseline":"month_ago"}`, "body.baseline"},
		{`{"snoozed_until":"soon"}`, "body.snoozed_until"},
		{`{"snoozed_until":12}`, "body.snoozed_until"},
		{`{"metric":"latency"}`, "body.metric"},
	} {
		m := expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, tc.body, 422, "")
		if errs, _ := m["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["location"] != tc.location {
			t.Errorf("patch %s: %v, want location %s", tc.body, m, tc.location)
		}
	}
	// A week_ago baseline makes the threshold a ratio, so an error_rate
	// threshold above 1 is allowed with it, and only with it.
	expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"metric":"error_rate","threshold":2}`, 422, "")
	p := expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"metric":"error_rate","threshold":2,"baseline":"week_ago"}`, 200, "")
	if p["baseline"] != "week_ago" || p["threshold"] != 2.0 {
		t.Fatalf("patched %v", p)
	}
	expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"baseline":null}`, 422, "")
	p = expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"baseline":null,"threshold":0.5}`, 200, "")
	if p["baseline"] != nil {
		t.Fatalf("baseline not removed: %v", p)
	}
	// A snooze in the past is cleared; one in the future reads back.
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	p = expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"snoozed_until":"`+until.Format(time.RFC3339)+`"}`, 200, "")
	if p["snoozed_until"] != until.Format(time.RFC3339) {
		t.Fatalf("snooze %v, want %s", p["snoozed_until"], until.Format(time.RFC3339))
	}
	p = expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"snoozed_until":"2020-01-01T00:00:00Z"}`, 200, "")
	if p["snoozed_until"] != nil {
		t.Fatalf("a past snooze was kept: %v", p)
	}
	expect(t, s, "GET", "/v1/rules/"+id+"/events?limit=0", tm.owner, "", 422, "")
	expect(t, s, "GET", "/v1/rules/"+id+"/events?cursor=%21", tm.owner, "", 400, "")
	expect(t, s, "GET", "/v1/rules/"+id+"/events", tm.otherOwner, "", 404, "not_found")
	expect(t, s, "GET", "/v1/rules/rul_nosuchrule/events", tm.owner, "", 404, "not_found")
}

// The rules walk-through (docs/alerting.md): a rule with notify_on_resolve and min_calls is
// driven to firing and back by telemetry; both notices reach every inbox,
// the history has two rows; snoozed, it changes state without deliveries.
func TestResolveNoticesHistoryAndSnooze(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.admin,
		`{"name":"Search errors","metric":"error_rate","tool":"search","comparator":">","threshold":0.1,"window_minutes":5,
		"channels":["in_app","email"],"min_calls":5,"notify_on_resolve":true}`, 201, "")
	id := r["id"].(string)
	evaluate := func(want string) map[string]any {
		t.Helper()
		ev := expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
		if ev["state"] != want {
			t.Fatalf("evaluation %v, want state %s", ev, want)
		}
		return ev
	}
	now := time.Now().Add(-time.Minute)

	// Three calls, all failing: under min_calls, so ok.
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now, 3, 3)
	if ev := evaluate("ok"); ev["value"] != 1.0 || ev["calls"] != 3.0 || ev["fired"] != false || ev["deliveries"] != 0.0 {
		t.Fatalf("under min_calls: %v", ev)
	}
	// Five more calls that succeed: 3 errors in 8 calls fires.
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now, 5, 0)
	ev := evaluate("firing")
	// Three people, in_app and email each.
	if ev["fired"] != true || ev["value"] != 0.375 || ev["calls"] != 8.0 || ev["deliveries"] != 6.0 {
		t.Fatalf("firing: %v", ev)
	}
	// Forty-two good calls: 3 / 50 is under 10%: resolves with notices.
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now, 42, 0)
	ev = evaluate("ok")
	if ev["resolved"] != true || ev["fired"] != false || ev["value"] != 0.06 || ev["deliveries"] != 6.0 {
		t.Fatalf("resolve: %v", ev)
	}
	for _, who := range []string{tm.owner, tm.admin, tm.member} {
		items := expect(t, s, "GET", "/v1/account/inbox", who, "", 200, "")["items"].([]any)
		if len(items) != 2 || !strings.HasPrefix(items[0].(map[string]any)["title"].(string), "Resolved: Search errors (error rate 6%)") ||
			!strings.HasPrefix(items[1].(map[string]any)["title"].(string), "Firing: Search errors") {
			t.Fatalf("inbox %v", items)
		}
	}
	if q := expect(t, s, "GET", "/v1/account/notifications?channel=email", tm.owner, "", 200, ""); len(q["items"].([]any)) != 6 {
		t.Fatalf("email deliveries %v", q)
	}
	h := expect(t, s, "GET", "/v1/rules/"+id+"/events", tm.member, "", 200, "")
	events := h["items"].([]any)
	if len(events) != 2 || h["next_cursor"] != nil {
		t.Fatalf("history %v", h)
	}
	e0, e1 := events[0].(map[string]any), events[1].(map[string]any)
	if keysOf(e0) != "at,expected,id,kind,reason,threshold,value" || e0["kind"] != "resolved" || e0["value"] != 0.06 || e0["threshold"] != 0.1 ||
		e1["kind"] != "fired" || e1["value"] != 0.375 || !isUTCTime(e0["at"]) || e0["at"].(string) < e1["at"].(string) {
		t.Fatalf("history items %v", events)
	}

	// Snoozed: the rule fires and resolves again, with history but no
	// deliveries.
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if p := expect(t, s, "PATCH", "/v1/rules/"+id, tm.admin, `{"snoozed_until":"`+until+`"}`, 200, ""); p["snoozed_until"] != until || p["state"] != "ok" {
		t.Fatalf("snooze %v", p)
	}
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now, 20, 20)
	if ev := evaluate("firing"); ev["fired"] != true || ev["deliveries"] != 0.0 {
		t.Fatalf("snoozed firing %v", ev)
	}
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now, 500, 0)
	if ev := evaluate("ok"); ev["resolved"] != true || ev["deliveries"] != 0.0 {
		t.Fatalf("snoozed resolve %v", ev)
	}
	if items := expect(t, s, "GET", "/v1/account/inbox", tm.member, "", 200, "")["items"].([]any); len(items) != 2 {
		t.Fatalf("snoozed rule delivered: %v", items)
	}
	// Paging the four events two at a time.
	p1 := expect(t, s, "GET", "/v1/rules/"+id+"/events?limit=2", tm.member, "", 200, "")
	cur, _ := p1["next_cursor"].(string)
	if len(p1["items"].([]any)) != 2 || cur == "" {
		t.Fatalf("first page %v", p1)
	}
	p2 := expect(t, s, "GET", "/v1/rules/"+id+"/events?limit=2&cursor="+cur, tm.member, "", 200, "")
	kinds := ""
	for _, e := range append(p1["items"].([]any), p2["items"].([]any)...) {
		kinds += e.(map[string]any)["kind"].(string) + " "
	}
	if kinds != "resolved fired resolved fired " || p2["next_cursor"] != nil {
		t.Fatalf("pages %v / %v", p1, p2)
	}
	// A deleted rule's history stays readable by its id (a rule that was
	// not firing gains no event), to its account only.
	expect(t, s, "DELETE", "/v1/rules/"+id, tm.admin, "", 204, "")
	expect(t, s, "GET", "/v1/rules/"+id, tm.owner, "", 404, "not_found")
	if h := expect(t, s, "GET", "/v1/rules/"+id+"/events", tm.owner, "", 200, ""); len(h["items"].([]any)) != 4 {
		t.Fatalf("history of the deleted rule %v", h)
	}
	other := newAPITeam(t, s)
	expect(t, s, "GET", "/v1/rules/"+id+"/events", other.owner, "", 404, "not_found")
}

// A week_ago baseline: with nothing a week ago the rule keeps its state;
// with last week's traffic it compares the ratio.
func TestWeekAgoBaseline(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner,
		`{"name":"Traffic drop","metric":"calls","comparator":"<","threshold":0.5,"window_minutes":60,"channels":["in_app"],"baseline":"week_ago"}`, 201, "")
	id := r["id"].(string)
	now := time.Now().Add(-10 * time.Minute)
	// calls < 0.5 would fire on 0 calls without a baseline; with a zero
	// baseline it holds.
	ev := expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
	if ev["state"] != "ok" || ev["value"] != nil || ev["baseline_value"] != 0.0 || ev["fired"] != false {
		t.Fatalf("zero baseline %v", ev)
	}
	testdb.Events(t, cdb, tm.account, tm.mcp, "", now.Add(-7*24*time.Hour), 40, 0)
	testdb.Events(t, cdb, tm.account, tm.mcp, "", now, 10, 0)
	ev = expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
	if ev["state"] != "firing" || ev["fired"] != true || ev["value"] != 0.25 || ev["baseline_value"] != 40.0 || ev["calls"] != 10.0 {
		t.Fatalf("quarter of last week %v", ev)
	}
	if in := expect(t, s, "GET", "/v1/account/inbox", tm.owner, "", 200, "")["items"].([]any); len(in) != 1 ||
		!strings.Contains(in[0].(map[string]any)["title"].(string), "calls vs. a week ago 0.25x") {
		t.Fatalf("inbox %v", in)
	}
	// Firing with last week's traffic gone (the rule keeps firing: a zero
	// baseline holds the state, it does not resolve).
	r2 := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner,
		`{"name":"Traffic drop 5m","metric":"calls","comparator":"<","threshold":0.5,"window_minutes":5,"channels":["in_app"],"baseline":"week_ago"}`, 201, "")
	if ev := expect(t, s, "POST", "/v1/rules/"+r2["id"].(string)+"/evaluate", tm.owner, "", 200, ""); ev["state"] != "ok" || ev["baseline_value"] != 0.0 {
		t.Fatalf("5-minute window with an empty week-ago window %v", ev)
	}
}

// p50_ms, p99_ms, sessions and users measure what the metric reads do.
func TestMoreRuleMetrics(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	at := time.Now().Add(-time.Minute)
	var rows []analytics.StoredRow
	for i := range 100 {
		d := float64(i + 1) // 1..100 ms
		it := analytics.Item{ID: testdb.RandHex(8), Timestamp: at, SessionID: fmt.Sprintf("s-%d", i%7), Method: "tools/call",
			Name: "search", Status: analytics.StatusOK, DurationMs: &d}
		if i%7 < 3 {
			it.UserID = fmt.Sprintf("u-%d", i%7) // sessions 0..2 have users; 3..6 fall back to the session
		}
		rows = append(rows, analytics.StoredRow{AccountID: tm.account, MCPID: tm.mcp, Node: "t", Seq: uint64(i), ReceivedAt: at, Item: it})
	}
	insertRows(t, cdb, rows)
	for metric, want := range map[string]float64{"sessions": 7, "users": 7, "calls": 100} {
		r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner,
			`{"name":"m","metric":"`+metric+`","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]}`, 201, "")
		if ev := expect(t, s, "POST", "/v1/rules/"+r["id"].(string)+"/evaluate", tm.owner, "", 200, ""); ev["value"] != want || ev["fired"] != true {
			t.Errorf("%s: %v, want %v", metric, ev, want)
		}
	}
	for metric, bounds := range map[string][2]float64{"p50_ms": {49, 52}, "p99_ms": {98, 100}} {
		r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner,
			`{"name":"m","metric":"`+metric+`","tool":"search","comparator":">","threshold":1000,"window_minutes":5,"channels":["in_app"]}`, 201, "")
		ev := expect(t, s, "POST", "/v1/rules/"+r["id"].(string)+"/evaluate", tm.owner, "", 200, "")
		if v, ok := ev["value"].(float64); !ok || v < bounds[0] || v > bounds[1] || ev["state"] != "ok" {
			t.Errorf("%s: %v, want within %v", metric, ev, bounds)
		}
	}
}

func insertRows(t *testing.T, cdb *clickhouse.DB, rows []analytics.StoredRow) {
	t.Helper()
	if err := cdb.InsertRows(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}
