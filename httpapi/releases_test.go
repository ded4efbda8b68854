package httpapi

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// releaseEvents writes calls tools/call items of tool under version at
// `at` plus i seconds, the first errors failing with kind.
func releaseEvents(t *testing.T, cdb *clickhouse.DB, account, mcp, version, tool string, at time.Time, calls, errors int, kind string) {
	t.Helper()
	rows := make([]analytics.StoredRow, calls)
	for i := range rows {
		d := 50.0
		it := analytics.Item{ID: testdb.RandHex(8), Timestamp: at.Add(time.Duration(i) * time.Second), SessionID: "s-1",
			Method: analytics.MethodToolsCall, Name: tool, ServerVersion: version, DurationMs: &d}
		if i < errors {
			it.ErrorKind = kind
		}
		it.Normalize()
		rows[i] = analytics.StoredRow{AccountID: account, MCPID: mcp, Node: "test", Seq: uint64(i), ReceivedAt: at, Item: it}
	}
	if err := cdb.InsertRows(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

// The release routes and the previous_release baseline through the API:
// 1.0.0 served search with 2% errors, 1.1.0 with 20% (timeouts); the
// comparison is worse, the verdict (read with a personal access token)
// fail, and an error_rate rule with previous_release > 2 fires.
func TestReleaseRoutesAndRule(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	now := time.Now().UTC().Truncate(time.Second)
	v1, v2 := now.Add(-5*time.Hour), now.Add(-30*time.Minute)
	releaseEvents(t, cdb, tm.account, tm.mcp, "1.0.0", "search", v1, 200, 4, analytics.ErrorKindToolError)
	releaseEvents(t, cdb, tm.account, tm.mcp, "1.1.0", "search", v2, 150, 30, analytics.ErrorKindTimeout)

	list := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases", tm.member, "", 200, "")
	items := list["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["server_version"] != "1.1.0" || items[0].(map[string]any)["calls"] != 150.0 ||
		items[1].(map[string]any)["errors"] != 4.0 {
		t.Fatalf("releases %v", list)
	}
	o := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/overview", tm.member, "", 200, "")
	if m := o["releases"].([]any); len(m) != 2 || m[0].(map[string]any)["server_version"] != "1.0.0" {
		t.Errorf("overview markers %v", o["releases"])
	}
	tool := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/tools/search", tm.member, "", 200, "")
	if m := tool["releases"].([]any); len(m) != 2 {
		t.Errorf("tool markers %v", tool["releases"])
	}

	c := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases/compare", tm.member, "", 200, "")
	if c["verdict"] != "worse" || c["base"].(map[string]any)["server_version"] != "1.0.0" || c["head"].(map[string]any)["calls"] != 150.0 {
		t.Fatalf("compare %v", c)
	}
	tools := c["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["verdict"] != "worse" {
		t.Errorf("compare tools %v", tools)
	}
	expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases/compare?base=1.1.0&head=1.0.0", tm.member, "", 422, "invalid")
	expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases/compare?base=0.9", tm.member, "", 404, "not_found")
	expect(t, s, "GET", "/v1/mcps/"+tm.otherMCP+"/releases/compare", tm.member, "", 404, "not_found")

	pat := expect(t, s, "POST", "/v1/account/tokens", tm.owner, `{"name":"ci","scope":"read"}`, 201, "")["token"].(string)
	v := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases/"+url.PathEscape("1.1.0")+"/verdict", pat, "", 200, "")
	if v["verdict"] != "fail" || v["compared_with"] != "1.0.0" || len(v["reasons"].([]any)) == 0 {
		t.Fatalf("verdict %v", v)
	}
	if v := expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases/1.0.0/verdict", pat, "", 200, ""); v["verdict"] != "pass" || v["compared_with"] != nil {
		t.Errorf("first release's verdict %v", v)
	}
	expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/releases/2.0.0/verdict", pat, "", 404, "not_found")

	base := `"name":"Release","metric":"error_rate","comparator":">","threshold":2,"window_minutes":60,"channels":["in_app"],"baseline":"previous_release"`
	m := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, `{"name":"R","metric":"sessions","comparator":">","threshold":2,"window_minutes":60,"channels":["in_app"],"baseline":"previous_release"}`, 422, "")
	if errs, _ := m["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["location"] != "body.baseline" {
		t.Errorf("sessions with previous_release: %v", m)
	}
	r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, "{"+base+"}", 201, "")
	if r["baseline"] != "previous_release" {
		t.Fatalf("created %v", r)
	}
	ev := expect(t, s, "POST", "/v1/rules/"+r["id"].(string)+"/evaluate", tm.owner, "", 200, "")
	// The window: 150 calls, 30 errors (0.2); the previous release: 4 in
	// 200 (0.02): ten times.
	if ev["fired"] != true || ev["value"].(float64) < 9.99 || ev["value"].(float64) > 10.01 || ev["baseline_value"] != 0.02 {
		t.Fatalf("evaluate %v", ev)
	}
}
