package httpapi

import (
	"context"
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

	p := expect(t, s, "PATCH", "/v1/slos/"+id, tm.admin, `{"objective":0.9,"severity":"page"}`, 200, "")
	if p["objective"] != 0.9 || p["severity"] != "page" {
		t.Fatalf("patched %v", p)
	}
	expect(t, s, "PATCH", "/v1/slos/"+id, tm.admin, `{"window_days":91}`, 422, "")
	expect(t, s, "DELETE", "/v1/slos/"+id, tm.member, "", 403, "")
	expect(t, s, "DELETE", "/v1/slos/"+id, tm.owner, "", 204, "")
	expect(t, s, "GET", "/v1/slos/"+id, tm.owner, "", 404, "")
}
