package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// As a new user: define "99.5% of search calls succeed over 28 days",
// send traffic that burns the budget fast, and get a page in the inbox
// that says how much budget is left; the SLO reads show the burn. Bad
// input is 422 on its field, members cannot create, other accounts see
// nothing.
func TestSLOWalkthrough(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	base := `"name":"Search succeeds","kind":"availability","objective":0.995,"tool":"search","channels":["in_app","email"]`
	for _, tc := range []struct{ body, location string }{
		{`"objective":1`, "body.objective"},
		{`"objective":0.2`, "body.objective"},
		{`"kind":"throughput"`, "body.kind"},
		{`"window_days":0`, "body.window_days"},
		{`"error_kinds":["oops"]`, "body.error_kinds"},
		{`"threshold_ms":100`, "body.threshold_ms"},
		{`"kind":"latency"`, "body.threshold_ms"},
		{`"kind":"latency","threshold_ms":250`, "body.threshold_ms"},
		{`"kind":"latency","threshold_ms":500,"error_kinds":["timeout"]`, "body.error_kinds"},
		{`"renotify_minutes":1`, "body.renotify_minutes"},
		{`"severity":"urgent"`, "body.severity"},
	} {
		body := "{" + base + "," + tc.body + "}"
		for _, f := range []string{`"objective"`, `"kind"`} {
			if strings.HasPrefix(tc.body, f) {
				body = "{" + strings.Replace(base, f+strings.SplitN(strings.SplitN(base, f, 2)[1], ",", 2)[0], tc.body, 1) + "}"
			}
		}
		m := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.owner, body, 422, "")
		if errs, _ := m["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["location"] != tc.location {
			t.Errorf("create with %s: %v, want location %s", tc.body, m, tc.location)
		}
	}
	m := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.owner, "{"+strings.Replace(base, `"availability"`, `"latency","threshold_ms":250`, 1)+"}", 422, "")
	if !strings.Contains(fmt.Sprint(m), "50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000") &&
		!strings.Contains(fmt.Sprint(m), "[50 100 200 300 500 750 1000 1500 2000 3000 5000 10000 30000]") {
		t.Errorf("a threshold off the ladder does not list the ladder: %v", m)
	}
	lat := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.owner, `{"name":"Search is fast","kind":"latency","objective":0.99,"threshold_ms":500,"tool":"search","channels":["in_app"]}`, 201, "")
	if lat["threshold_ms"] != 500.0 || lat["error_kinds"] != nil || lat["renotify_minutes"] != nil {
		t.Fatalf("latency SLO %v", lat)
	}
	expect(t, s, "DELETE", "/v1/slos/"+lat["id"].(string), tm.owner, "", 204, "")
	expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.member, "{"+base+"}", 403, "")
	expect(t, s, "POST", "/v1/mcps/"+tm.otherMCP+"/slos", tm.owner, "{"+base+"}", 404, "")
	slo := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/slos", tm.owner, "{"+base+"}", 201, "")
	id := slo["id"].(string)
	if slo["window_days"] != 28.0 || slo["severity"] != "ticket" || slo["state"] != "ok" || slo["sli"] != nil ||
		len(slo["error_kinds"].([]any)) != 8 || len(slo["burn_rates"].(map[string]any)) != 5 {
		t.Fatalf("created %v", slo)
	}

	now := time.Now().UTC()
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now.Add(-3*24*time.Hour), 20000, 0)
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now.Add(-40*time.Minute), 200, 40)
	testdb.Events(t, cdb, tm.account, tm.mcp, "search", now.Add(-time.Minute), 100, 20)
	got := expect(t, s, "GET", "/v1/slos/"+id, tm.member, "", 200, "")
	rates := got["burn_rates"].(map[string]any)
	if got["state"] != "page" || rates["5m"].(float64) < 14.4 || rates["1h"].(float64) < 14.4 || len(got["series"].([]any)) < 28 {
		t.Fatalf("burning SLO %v", got)
	}
	budget := got["error_budget"].(map[string]any)
	if budget["spent"] != 60.0 || budget["remaining"].(float64) >= 1 || got["budget_lasts_hours"] == nil {
		t.Fatalf("budget %v", got)
	}
	list := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/slos", tm.member, "", 200, "")
	if items := list["items"].([]any); len(items) != 1 || items[0].(map[string]any)["state"] != "page" {
		t.Fatalf("list %v", list)
	}
	expect(t, s, "GET", "/v1/slos/"+id, tm.otherOwner, "", 404, "")

	// The pass pages the team through the inbox.
	ev := &alerting.SLOEvaluator{Store: s.opts.SLOs.(alerting.SLOEvalStore), SLI: cdb.Reads}
	if sum, err := ev.EvaluateAll(context.Background(), now); err != nil || sum.Alerted != 1 {
		t.Fatalf("pass %+v, %v", sum, err)
	}
	in := expect(t, s, "GET", "/v1/account/inbox", tm.member, "", 200, "")
	items := in["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("inbox %v", in)
	}
	it := items[0].(map[string]any)
	if it["rule_id"] != id || !strings.HasPrefix(it["title"].(string), "Page: Search succeeds (") ||
		!strings.Contains(it["body"].(string), "of the error budget left, gone in ") {
		t.Fatalf("inbox item %v", it)
	}

	// Still paging five minutes later (the 30 min and 6 h windows): with
	// renotify_minutes 5 the alert is delivered again, once; the history
	// lists the page and the re-notification with the budget left.
	if p := expect(t, s, "PATCH", "/v1/slos/"+id, tm.admin, `{"renotify_minutes":5}`, 200, ""); p["renotify_minutes"] != 5.0 || p["state"] != "page" {
		t.Fatalf("renotify patch %v", p)
	}
	for i, at := range []time.Time{now.Add(5 * time.Minute), now.Add(6 * time.Minute)} {
		if sum, err := ev.EvaluateAll(context.Background(), at); err != nil || sum.Renotified != 1-i || sum.Changed+sum.Alerted != 0 {
			t.Fatalf("pass at +%d min: %+v, %v", 5+i, sum, err)
		}
	}
	in = expect(t, s, "GET", "/v1/account/inbox", tm.member, "", 200, "")
	if items := in["items"].([]any); len(items) != 2 || !strings.HasPrefix(items[0].(map[string]any)["title"].(string), "Still paging: Search succeeds (") {
		t.Fatalf("inbox after renotify %v", in)
	}
	hist := expect(t, s, "GET", "/v1/slos/"+id+"/events", tm.member, "", 200, "")
	evs := hist["items"].([]any)
	if len(evs) != 2 || evs[0].(map[string]any)["kind"] != "renotified" || evs[1].(map[string]any)["kind"] != "page" ||
		evs[1].(map[string]any)["budget_remaining"].(float64) >= 1 || evs[1].(map[string]any)["burn_rates"].(map[string]any)["5m"].(float64) < 14.4 {
		t.Fatalf("history %v", hist)
	}
	expect(t, s, "GET", "/v1/slos/"+id+"/events", tm.otherOwner, "", 404, "")
	expect(t, s, "GET", "/v1/slos/"+id+"/events?cursor=oops", tm.member, "", 400, "")

	p := expect(t, s, "PATCH", "/v1/slos/"+id, tm.admin, `{"objective":0.9,"severity":"page"}`, 200, "")
	if p["objective"] != 0.9 || p["severity"] != "page" {
		t.Fatalf("patched %v", p)
	}
	expect(t, s, "PATCH", "/v1/slos/"+id, tm.admin, `{"window_days":91}`, 422, "")
	expect(t, s, "DELETE", "/v1/slos/"+id, tm.member, "", 403, "")
	expect(t, s, "DELETE", "/v1/slos/"+id, tm.owner, "", 204, "")
	expect(t, s, "GET", "/v1/slos/"+id, tm.owner, "", 404, "")
}
