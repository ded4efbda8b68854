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
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
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
