package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// A rule that fires while snoozed notifies once when the snooze ends, if
// it is still firing (through the pass); a rule that fired, and notified,
// before it was snoozed does not notify again when the snooze ends.
func TestSnoozeEndNotifiesAMutedFiringOnce(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	rule := func(name string) string {
		return expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.admin, `{"name":"`+name+`","metric":"errors","tool":"search",
			"comparator":">","threshold":0,"window_minutes":5,"channels":["in_app"]}`, 201, "")["id"].(string)
	}
	evaluate := func(id string) map[string]any {
		t.Helper()
		return expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
	}
	snooze := func(id string) time.Time {
		until := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second).UTC()
		expect(t, s, "PATCH", "/v1/rules/"+id, tm.admin, `{"snoozed_until":"`+until.Format(time.RFC3339)+`"}`, 200, "")
		return until
	}
	muted, before := rule("Muted"), rule("Before")
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", time.Now().Add(-time.Minute), 2, 2)
	// "Before" fires and notifies, then is snoozed.
	if ev := evaluate(before); ev["fired"] != true || ev["deliveries"] != 3.0 {
		t.Fatalf("firing before the snooze: %v", ev)
	}
	snooze(before)
	// "Muted" fires while snoozed: no deliveries.
	until := snooze(muted)
	if ev := evaluate(muted); ev["fired"] != true || ev["deliveries"] != 0.0 || ev["state"] != "firing" {
		t.Fatalf("firing while snoozed: %v", ev)
	}
	// Still snoozed: nothing yet.
	sum, err := s.opts.Evaluator.EvaluateAll(context.Background(), time.Now())
	if err != nil || sum.Notices != 0 {
		t.Fatalf("pass while snoozed: %+v %v", sum, err)
	}
	time.Sleep(time.Until(until) + 100*time.Millisecond)
	sum, err = s.opts.Evaluator.EvaluateAll(context.Background(), time.Now())
	if err != nil || sum.Notices != 1 || sum.Fired != 0 || sum.Resolved != 0 {
		t.Fatalf("pass after the snooze: %+v %v", sum, err)
	}
	// Once: neither the next pass nor an evaluation notifies again.
	if sum, err = s.opts.Evaluator.EvaluateAll(context.Background(), time.Now()); err != nil || sum.Notices != 0 {
		t.Fatalf("second pass after the snooze: %+v %v", sum, err)
	}
	for _, id := range []string{muted, before} {
		if ev := evaluate(id); ev["state"] != "firing" || ev["deliveries"] != 0.0 || ev["fired"] != false {
			t.Fatalf("evaluation after the notice: %v", ev)
		}
	}
	items := expect(t, s, "GET", "/v1/account/inbox", tm.member, "", 200, "")["items"].([]any)
	var titles []string
	for _, it := range items {
		titles = append(titles, it.(map[string]any)["title"].(string))
	}
	if len(titles) != 2 || !strings.HasPrefix(titles[0], "Firing: Muted (errors 2)") || !strings.HasPrefix(titles[1], "Firing: Before") {
		t.Fatalf("inbox %v", titles)
	}
	if r := expect(t, s, "GET", "/v1/rules/"+muted, tm.owner, "", 200, ""); r["snoozed_until"] != nil || r["state"] != "firing" {
		t.Fatalf("rule after the notice: %v", r)
	}
}

// A window under min_calls keeps the rule's state: a firing rule neither
// resolves nor fires again on a quiet window, and resolves once a window
// with enough calls is under the threshold.
func TestMinCallsWindowKeepsTheState(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	id := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.admin, `{"name":"Rate","metric":"error_rate","tool":"search",
		"comparator":">","threshold":0.1,"window_minutes":5,"channels":["in_app"],"min_calls":5,"notify_on_resolve":true}`, 201, "")["id"].(string)
	ctx := context.Background()
	t0 := time.Now().Add(-40 * time.Minute).Truncate(time.Minute)
	evaluate := func(at time.Time, state string) {
		t.Helper()
		ev, err := s.opts.Evaluator.EvaluateRule(ctx, tm.account, id, at)
		if err != nil || ev.State != state {
			t.Fatalf("at %s: %+v %v, want %s", at.Sub(t0), ev, err, state)
		}
	}
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", t0, 5, 5)
	evaluate(t0.Add(time.Minute), "firing")
	// One error in the window, under min_calls: still firing, no resolve.
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", t0.Add(10*time.Minute), 1, 1)
	evaluate(t0.Add(11*time.Minute), "firing")
	// No call at all: still firing.
	evaluate(t0.Add(20*time.Minute), "firing")
	// Enough calls, under the threshold: resolves.
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", t0.Add(25*time.Minute), 10, 0)
	evaluate(t0.Add(26*time.Minute), "ok")
	// Quiet again: stays ok (not firing on a window it cannot judge).
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", t0.Add(35*time.Minute), 2, 2)
	evaluate(t0.Add(36*time.Minute), "ok")
	h := expect(t, s, "GET", "/v1/rules/"+id+"/events", tm.member, "", 200, "")["items"].([]any)
	if len(h) != 2 || h[0].(map[string]any)["kind"] != "resolved" || h[1].(map[string]any)["kind"] != "fired" {
		t.Fatalf("history %v", h)
	}
}
