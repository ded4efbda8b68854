package httpapi

import (
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// A seasonal rule through the API: its fields are validated, it holds
// without history (expected null), and once two weeks of history exist
// the evaluation answers the band and the history keeps it.
func TestSeasonalRuleAPI(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	base := `"name":"Quiet","metric":"calls","comparator":"<","threshold":0,"window_minutes":30,"channels":["in_app"]`
	for _, tc := range []struct{ body, location string }{
		{`"sensitivity":"high"`, "body.sensitivity"},
		{`"baseline":"seasonal","sensitivity":"extreme"`, "body.sensitivity"},
		{`"baseline":"yearly"`, "body.baseline"},
	} {
		m := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, "{"+base+","+tc.body+"}", 422, "")
		if errs, _ := m["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["location"] != tc.location {
			t.Errorf("create with %s: %v, want location %s", tc.body, m, tc.location)
		}
	}
	r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, "{"+base+`,"baseline":"seasonal"}`, 201, "")
	if r["baseline"] != "seasonal" || r["sensitivity"] != "medium" {
		t.Fatalf("created %v", r)
	}
	id := r["id"].(string)
	ev := expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
	if ev["expected"] != nil || ev["state"] != "ok" {
		t.Fatalf("no history: %v", ev)
	}
	now := time.Now().UTC()
	for w := 1; w <= 2; w++ {
		testdb.Events(t, cdb, tm.account, tm.mcp, "", now.Add(-time.Duration(w)*alerting.Week-10*time.Minute), 500, 0)
	}
	ev = expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
	band, _ := ev["expected"].(map[string]any)
	if ev["fired"] != true || band == nil || band["low"].(float64) <= 0 || band["high"].(float64) < 500 {
		t.Fatalf("two weeks: %v", ev)
	}
	h := expect(t, s, "GET", "/v1/rules/"+id+"/events", tm.member, "", 200, "")
	if it := h["items"].([]any)[0].(map[string]any); it["expected"] == nil {
		t.Fatalf("history %v", h)
	}
	p := expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"sensitivity":"low"}`, 200, "")
	if p["sensitivity"] != "low" || p["state"] != "ok" {
		t.Fatalf("patched %v", p)
	}
}
