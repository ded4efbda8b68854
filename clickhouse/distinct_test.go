package clickhouse_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpscope/telemetry/analytics"
)

// TestDistinctCountsBeyondTheExactSet reads distinct sessions and users
// of MCPs with just enough sessions for uniqHLL12's exact small set (16),
// just past it, and well past it, each session calling one tool on one of
// three days, so the read merges several daily states: exact up to 16,
// within the documented error beyond (see distinct).
func TestDistinctCountsBeyondTheExactSet(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	sizes := []int{16, 17, 40, 3000}
	var rows []analytics.StoredRow
	for _, n := range sizes {
		for i := 0; i < n; i++ {
			s := itemSpec{mcp: fmt.Sprintf("mcp-hll-%d", n), ts: day0.AddDate(0, 0, i%3).Add(17 * 60e9),
				session: fmt.Sprintf("s-%d-%d", n, i), user: fmt.Sprintf("u-%d", i), method: analytics.MethodToolsCall,
				name: "lookup", dur: ms(3), client: "cursor", clientVer: "1.2.0", id: fmt.Sprintf("hll-%d-%d", n, i)}
			rows = append(rows, s.row(uint64(len(rows)+1)))
		}
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	r := analytics.NewRange(day0, day0.AddDate(0, 0, 6))
	for _, n := range sizes {
		mcp, want := fmt.Sprintf("mcp-hll-%d", n), int64(n)
		ov, err := db.Overview(ctx, mcp, r)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, mcp+" calls", ov.Calls, want)
		distinct(t, mcp+" sessions", ov.Sessions, want)
		distinct(t, mcp+" users", ov.Users, want)
		tools, err := db.Tools(ctx, mcp, r)
		if err != nil || len(tools.Items) != 1 {
			t.Fatalf("%s tools = %+v, %v", mcp, tools, err)
		}
		distinct(t, mcp+" tool sessions", tools.Items[0].Sessions, want)
		in, err := db.Insights(ctx, mcp, r)
		if err != nil || len(in.Clients.Items) != 1 {
			t.Fatalf("%s insights = %+v, %v", mcp, in, err)
		}
		distinct(t, mcp+" client sessions", in.Clients.Items[0].Sessions, want)
		t.Logf("%s: %d sessions, %d users read for %d", mcp, ov.Sessions, ov.Users, n)
	}
}
