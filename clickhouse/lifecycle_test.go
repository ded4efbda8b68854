package clickhouse_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// keptOnMCPDeletion are the tables with an mcp_id column whose rows
// outlive a deleted MCP (docs/data-lifecycle.md): the usage counts.
var keptOnMCPDeletion = []string{"usage_daily"}

// eventuallyNone polls until count answers 0 for every table, or fails.
func eventuallyNone(t *testing.T, what string, tables []string, count func(table string) (uint64, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, table := range tables {
		for {
			n, err := count(table)
			if err != nil {
				t.Fatalf("%s: %s: %v", what, table, err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s still holds %d rows", what, table, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// TestDeletionReachesEveryTable deletes a person with a thousand long
// session ids (more than one statement's worth under max_query_size),
// then their MCP: afterwards no table the server has (not the list the
// store derives from its migrations) holds the person's rows, then the
// MCP's; another person's and another MCP's rows stay. It fails when a
// table holding an MCP's rows is missing from what a deletion reaches.
func TestDeletionReachesEveryTable(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, func(cfg *clickhouse.Config) { cfg.DeletionGrace = 100 * time.Millisecond })
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	const mcp, other, person = "mcp_life", "mcp_keep", "ada'\\é"
	// 128 characters, 316 bytes quoted: a thousand are over 300 KB.
	session := func(i int) string { return fmt.Sprintf("P%03d", i) + strings.Repeat("'€", 62) }
	var rows []analytics.StoredRow
	add := func(mcpID, user, sess string, i int) {
		s := itemSpec{account: acct1, mcp: mcpID, ts: now.Add(time.Duration(i) * time.Millisecond), session: sess,
			method: analytics.MethodToolsCall, name: "search", dur: ms(10), client: "cursor", clientVer: "1.0",
			user: user, id: fmt.Sprint("i", len(rows)), isErr: i%3 == 0}
		if i%3 == 0 { // refused arguments: rows in refusal_daily too
			s.errType, s.errMsg = "-32602", "query: required"
		}
		rows = append(rows, s.row(uint64(len(rows)+1)))
	}
	for i := range 1000 {
		add(mcp, person, session(i), i)
	}
	for i := range 5 {
		add(mcp, "u-2", "s-u2", i)
		add(other, person, session(i), i)
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ComputeNightly(ctx, now); err != nil { // rows in nightly too
		t.Fatal(err)
	}
	if err := db.InsertProbeResults(ctx, probeRows(now, mcp, other)); err != nil { // probe checks too
		t.Fatal(err)
	}

	withMCP, perPerson, err := clickhouse.LifecycleTables()
	if err != nil {
		t.Fatal(err)
	}
	onServer, err := db.TablesWith(ctx, "mcp_id")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(onServer), func(s string) bool { return slices.Contains(keptOnMCPDeletion, s) })
	if !slices.Equal(withMCP, want) {
		t.Errorf("deleting an MCP reaches %v; the tables holding an MCP's rows are %v (kept: %v)", withMCP, want, keptOnMCPDeletion)
	}
	for _, b := range []string{"session_span", "breakdown_daily", "mcp_hourly", "tool_hourly"} {
		if !slices.Contains(withMCP, b) {
			t.Errorf("deleting an MCP misses %s", b)
		}
	}

	// Where the person's rows are found: by user id, per-user key or the
	// ids of their sessions.
	personConds := map[string]string{
		"user_id":    "user_id = " + clickhouse.QuoteString(person),
		"user_key":   "user_key = " + clickhouse.QuoteString(clickhouse.UserKey(person, "")),
		"session_id": "session_id LIKE 'P%'",
	}
	var personTables []string
	personCount := map[string]string{}
	for _, col := range []string{"user_id", "user_key", "session_id"} {
		ts, err := db.TablesWith(ctx, col)
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range ts {
			if _, seen := personCount[table]; !seen {
				personCount[table] = personConds[col]
				personTables = append(personTables, table)
			}
		}
	}
	slices.Sort(personTables)
	if !slices.Equal(perPerson, personTables) {
		t.Errorf("a person's deletion reaches %v; the tables with a user or session column are %v", perPerson, personTables)
	}
	count := func(mcpID, cond string) func(string) (uint64, error) {
		return func(table string) (uint64, error) {
			return db.CountWhere(ctx, table, "mcp_id = ? AND "+cond, mcpID)
		}
	}
	for _, table := range personTables {
		if n, err := count(mcp, personCount[table])(table); err != nil || n == 0 {
			t.Fatalf("before the deletion %s holds %d rows of the person (%v)", table, n, err)
		}
	}

	if err := db.DeleteUserTelemetry(ctx, mcp, person); err != nil {
		t.Fatal(err)
	}
	for _, table := range personTables {
		eventuallyNone(t, "after the person's deletion", []string{table}, count(mcp, personCount[table]))
	}
	// The other person's rows, and the person's rows of another MCP, stay.
	for _, c := range []struct{ mcp, cond string }{{mcp, "user_id = 'u-2'"}, {other, personCount["events"]}} {
		if n, err := count(c.mcp, c.cond)("events"); err != nil || n != 5 {
			t.Errorf("%s %s: %d rows left, want 5 (%v)", c.mcp, c.cond, n, err)
		}
	}
	if n, err := count(mcp, "session_id = 's-u2'")("session_span"); err != nil || n == 0 {
		t.Errorf("the other person's session span went too (%d, %v)", n, err)
	}

	if err := db.DeleteMCPTelemetry(ctx, mcp); err != nil {
		t.Fatal(err)
	}
	eventuallyNone(t, "after the MCP's deletion", want, count(mcp, "1"))
	if n, err := count(mcp, "1")("usage_daily"); err != nil || n == 0 {
		t.Errorf("the usage counts of the deleted MCP went (%d, %v)", n, err)
	}
	for _, table := range want {
		if n, err := count(other, "1")(table); err != nil || n == 0 {
			t.Errorf("%s lost the other MCP's rows (%d, %v)", table, n, err)
		}
	}
}

// timeCond is the condition "older than cutoff" on a table's time column,
// as the server describes its columns.
func timeCond(t *testing.T, db *clickhouse.DB, table string, cutoff time.Time) string {
	t.Helper()
	for _, c := range []struct{ col, cond string }{
		{"ts", "ts < toDateTime(%d)"}, {"at", "at < toDateTime(%d)"}, {"received_at", "received_at < toDateTime(%d)"}, {"hour", "hour < toDateTime(%d)"}, {"day", "day < toDate(toDateTime(%d))"},
		{"month", "month < toStartOfMonth(toDate(toDateTime(%d)))"}, {"last_seen", "finalizeAggregation(last_seen) < %d000"},
	} {
		ts, err := db.TablesWith(context.Background(), c.col)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ts, table) {
			return fmt.Sprintf(c.cond, cutoff.Unix())
		}
	}
	t.Fatalf("%s has no time column this test knows", table)
	return ""
}

// TestRetentionReachesEveryTable keeps 60 days on the installation and 30
// for the account: after the pass no table with an mcp_id column holds a
// row of the MCPs older than their cut-off (monthly rollups: than its
// month), the newest rows stay, and the insert markers of the table
// without partitions are gone but for the last days'.
func TestRetentionReachesEveryTable(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	today := analytics.UTCDay(time.Now())
	var rows []analytics.StoredRow
	for _, m := range []string{"mcp_short", "mcp_long"} {
		acct := map[string]string{"mcp_short": acct1, "mcp_long": "acct-2"}[m]
		for _, age := range []int{0, 40, 100} {
			ts := today.AddDate(0, 0, -age).Add(12 * time.Hour)
			s := itemSpec{account: acct, mcp: m, ts: ts, session: fmt.Sprint("s", age), method: analytics.MethodToolsCall,
				name: "search", dur: ms(5), isErr: true, errType: "E", user: "u", id: fmt.Sprint(m, age)}
			rows = append(rows, s.row(uint64(len(rows)+1)))
		}
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	for _, age := range []int{0, 40, 100} {
		if err := db.InsertProbeResults(ctx, probeRows(today.AddDate(0, 0, -age).Add(12*time.Hour), "mcp_short", "mcp_long")); err != nil {
			t.Fatal(err)
		}
	}
	accts := []analytics.AccountRetention{{AccountID: acct1, Days: 30, MCPIDs: []string{"mcp_short"}},
		{AccountID: "acct-2", Days: 60, MCPIDs: []string{"mcp_long"}}}
	steps, err := db.PlanRetention(ctx, 60, accts, today)
	if err != nil {
		t.Fatal(err)
	}
	kinds := ""
	for _, s := range steps {
		kinds += s.Kind + " "
		if err := db.ApplyRetention(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if kinds != "drop delete markers " {
		t.Errorf("steps: %s", kinds)
	}
	tables, err := db.TablesWith(ctx, "mcp_id")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mcp  string
		days int
	}{{"mcp_short", 30}, {"mcp_long", 60}} {
		cutoff := analytics.KeptFrom(c.days, today)
		eventuallyNone(t, "after retention ("+c.mcp+")", tables, func(table string) (uint64, error) {
			return db.CountWhere(ctx, table, "mcp_id = ? AND "+timeCond(t, db, table, cutoff), c.mcp)
		})
		for _, table := range []string{"events", "session_span", "mcp_daily", "breakdown_daily", "mcp_hourly"} {
			if n, err := db.CountWhere(ctx, table, "mcp_id = ?", c.mcp); err != nil || n == 0 {
				t.Errorf("%s lost the kept rows of %s (%d, %v)", table, c.mcp, n, err)
			}
		}
	}
	markers := fmt.Sprintf("mcp_id LIKE '%s%%'", clickhouse.MarkerPrefix)
	old := fmt.Sprintf("%s AND mcp_id < '%s%s'", markers, clickhouse.MarkerPrefix, today.AddDate(0, 0, -2).Format("20060102"))
	if n, err := db.CountWhere(ctx, "session_span", old); err != nil || n != 0 {
		t.Errorf("session_span keeps %d old insert markers (%v)", n, err)
	}
	if n, err := db.CountWhere(ctx, "session_span", markers); err != nil || n == 0 {
		t.Errorf("session_span lost today's insert markers (%d, %v)", n, err)
	}
	// A second pass has nothing left to do.
	if steps, err := db.PlanRetention(ctx, 60, accts, today); err != nil || len(steps) != 0 {
		t.Errorf("second pass: %v %v", steps, err)
	}
}

// probeRows are one probe check of each MCP at at.
func probeRows(at time.Time, mcps ...string) []clickhouse.ProbeResultRow {
	var rows []clickhouse.ProbeResultRow
	for _, m := range mcps {
		rows = append(rows, clickhouse.ProbeResultRow{AccountID: acct1, MCPID: m, ProbeID: "prb_" + m, Check: alerting.ProbeCheck{At: at, OK: true}})
	}
	return rows
}
