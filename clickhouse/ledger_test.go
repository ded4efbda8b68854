package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// An insert whose views did not all run (here: two views detached while
// it ran, as when the server dies between the views of an insert) leaves
// the raw rows stored and two rollups short. CompleteViews finds, by the
// insert's markers, exactly which rollups lack which insert of which day
// and re-derives them: afterwards every read equals that of the same items
// inserted whole, and a second call has nothing to do.
func TestCompleteViewsAfterAnInsertCutShort(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	if day := now.Truncate(24 * time.Hour); now.Sub(day) < time.Hour {
		// The items of the last 40 minutes must lie in one UTC day (the
		// test counts two days): in the first hour, the day before's end.
		now = day.Add(-time.Second)
	}
	yesterday := now.Add(-24 * time.Hour)
	items := func(mcp, node string) []analytics.StoredRow {
		var rows []analytics.StoredRow
		for i := range 40 {
			ts := now.Add(-time.Duration(i) * time.Minute)
			if i%3 == 0 {
				ts = yesterday.Add(-time.Duration(i) * time.Minute)
			}
			s := itemSpec{account: acct1, mcp: mcp, ts: ts, session: fmt.Sprintf("s%d", i%5), method: analytics.MethodToolsCall,
				name: fmt.Sprintf("tool-%d", i%4), dur: ms(float64(10 + i)), isErr: i%7 == 0, errType: map[bool]string{true: "Timeout"}[i%7 == 0],
				client: "cursor", clientVer: "1.0", user: fmt.Sprintf("u%d", i%6), id: fmt.Sprintf("%s-%d", mcp, i)}
			r := s.row(uint64(1 + i/10)) // four records of ten items
			r.Node = node
			rows = append(rows, r)
		}
		return rows
	}
	whole, cut := items("mcp_whole", "node-w"), items("mcp_cut", "node-c")
	if err := db.InsertRows(ctx, whole); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"mcp_daily", "tool_daily"} {
		if err := db.DetachView(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	err := db.InsertRows(ctx, cut)
	for _, v := range []string{"mcp_daily", "tool_daily"} {
		if err := db.AttachView(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	r := analytics.NewRange(yesterday.Add(-2*time.Hour), now)
	read := func(mcp string) (any, any, any) { return rollupReads(t, db, mcp, r) }
	if o, _, _ := read("mcp_cut"); o.(*analytics.Overview).Calls != 0 {
		t.Fatalf("the overview counts %d calls of the cut insert: the view ran", o.(*analytics.Overview).Calls)
	}

	// The retry: rows by record and day are found stored...
	stored, err := db.InsertedSeqs(ctx, "node-c", 1, 4, yesterday.Add(-2*time.Hour), now)
	if err != nil || len(stored) != 8 {
		t.Fatalf("stored (record, day) pairs of the cut insert: %v, %v; want 4 records on 2 days", stored, err)
	}
	// ... and the rollups completed: two views, two days, on every shard
	// (each shard holds the insert's marker, rows or not).
	shards := 1
	if testenv.ClickHouseCluster() != "" {
		s, err := db.ShardReplicas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		shards = len(s)
	}
	n, err := db.CompleteViews(ctx, "node-c", 1, 4, yesterday.Add(-2*time.Hour), now)
	if err != nil || n != 4*shards {
		t.Fatalf("CompleteViews = %d, %v; want %d (mcp_daily and tool_daily, two days each, %d shards)", n, err, 4*shards, shards)
	}
	wantO, wantT, wantB := read("mcp_whole")
	gotO, gotT, gotB := read("mcp_cut")
	for _, c := range []struct {
		name      string
		got, want any
	}{{"overview", gotO, wantO}, {"tools", gotT, wantT}, {"breakdown", gotB, wantB}} {
		got, _ := json.Marshal(c.got)
		want, _ := json.Marshal(c.want)
		if string(got) != strings.ReplaceAll(string(want), "mcp_whole", "mcp_cut") {
			t.Errorf("%s of the completed insert:\n got %+v\nwant %+v", c.name, c.got, c.want)
		}
	}
	if o := gotO.(*analytics.Overview); o.Calls != 40 {
		t.Errorf("overview calls %d, want 40", o.Calls)
	}
	// Idempotent: nothing is missing any more, so nothing is added twice.
	if n, err := db.CompleteViews(ctx, "node-c", 1, 4, yesterday.Add(-2*time.Hour), now); err != nil || n != 0 {
		t.Errorf("second CompleteViews = %d, %v; want 0", n, err)
	}
	if n, err := db.CompleteViews(ctx, "node-w", 1, 4, yesterday.Add(-2*time.Hour), now); err != nil || n != 0 {
		t.Errorf("CompleteViews of the whole insert = %d, %v; want 0", n, err)
	}
	if o, _, _ := read("mcp_cut"); !reflect.DeepEqual(o, gotO) {
		t.Errorf("overview after a second CompleteViews: %+v", o)
	}
}

// rollupReads reads an MCP's overview, tool list and tool breakdown, which
// between them read every daily rollup of calls.
func rollupReads(t *testing.T, db *clickhouse.DB, mcp string, r analytics.Range) (*analytics.Overview, *analytics.ToolList, *analytics.Breakdown) {
	t.Helper()
	ctx := context.Background()
	o, err := db.Overview(ctx, mcp, r)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := db.Tools(ctx, mcp, r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Breakdown(ctx, mcp, r, analytics.BreakdownQuery{By: "tool", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	return o, tl, b
}

// The breakdown's rows derive from events through a second view
// (migration 008: breakdown_input, a Null table, then one of two views
// into breakdown_daily, whichever the server version runs). An insert cut
// short before that view ran is completed through both SELECTs: the
// breakdowns then equal those of the same items inserted whole.
func TestCompleteViewsThroughTheBreakdownInput(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	items := func(mcp, node string) []analytics.StoredRow {
		var rows []analytics.StoredRow
		for i := range 30 {
			s := itemSpec{account: acct1, mcp: mcp, ts: now.Add(-time.Duration(i*50) * time.Minute), session: fmt.Sprint("s", i%4),
				method: []string{analytics.MethodToolsCall, "resources/read"}[i%2], name: fmt.Sprint("n", i%3), dur: ms(float64(i)),
				isErr: i%5 == 0, errType: map[bool]string{true: "Timeout"}[i%5 == 0], client: fmt.Sprint("c", i%2), clientVer: "2", user: fmt.Sprint("u", i%7),
				id: fmt.Sprint(mcp, i)}
			r := s.row(uint64(1 + i/10))
			r.Node = node
			rows = append(rows, r)
		}
		return rows
	}
	if err := db.InsertRows(ctx, items("mcp_whole", "node-w")); err != nil {
		t.Fatal(err)
	}
	views := []string{"breakdown_daily"} // both views, the one of each server version
	for _, v := range views {
		if err := db.DetachView(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	err := db.InsertRows(ctx, items("mcp_cut", "node-c"))
	for _, v := range views {
		if err := db.AttachView(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	r := analytics.NewRange(now.Add(-26*time.Hour), now)
	breakdowns := func(mcp string) string {
		var all []any
		for _, by := range []string{"tool", "method", "client_name", "error_type"} {
			b, err := db.Breakdown(ctx, mcp, r, analytics.BreakdownQuery{By: by, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b)
		}
		out, _ := json.Marshal(all)
		return string(out)
	}
	if b, err := db.Breakdown(ctx, "mcp_cut", r, analytics.BreakdownQuery{By: "method", Limit: 20}); err != nil || len(b.Items) != 0 {
		t.Fatalf("the cut insert's breakdown before the completion: %+v, %v; want nothing (the view did not run)", b, err)
	}
	dayset := map[int64]bool{} // the items span 24 h 10 min: two days, or three just after midnight
	for i := range 30 {
		dayset[analytics.DayOf(now.Add(-time.Duration(i*50)*time.Minute))] = true
	}
	days := len(dayset)
	if testenv.ClickHouseCluster() != "" { // each shard holds the insert's markers
		s, err := db.ShardReplicas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		days *= len(s)
	}
	n, err := db.CompleteViews(ctx, "node-c", 1, 3, now.Add(-26*time.Hour), now)
	if err != nil || n != days {
		t.Fatalf("CompleteViews = %d, %v; want %d (breakdown_daily, one per day and shard)", n, err, days)
	}
	if got, want := breakdowns("mcp_cut"), strings.ReplaceAll(breakdowns("mcp_whole"), "mcp_whole", "mcp_cut"); got != want {
		t.Errorf("breakdowns of the completed insert:\n got %s\nwant %s", got, want)
	}
	if n, err := db.CompleteViews(ctx, "node-c", 1, 3, now.Add(-26*time.Hour), now); err != nil || n != 0 {
		t.Errorf("second CompleteViews = %d, %v; want 0", n, err)
	}
}
