package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// The SLO indicator reads (docs/slos.md), proven on ClickHouse 26 too:
// the minute windows from events, the hour windows and the daily series
// from the hourly rollups, each MCP and tool counted under its own key.
func TestSLICountsAndSeries(t *testing.T) {
	db := openDB(t, true)
	ctx := context.Background()
	to := time.Date(2026, 11, 20, 12, 30, 0, 0, time.UTC)
	var rows []analytics.StoredRow
	add := func(mcp, tool string, at time.Time, calls, errors int) {
		for i := range calls {
			it := analytics.Item{ID: "i" + at.Format("150405") + tool + string(rune('a'+i%26)) + string(rune('a'+i/26)), Timestamp: at,
				SessionID: "s", Method: "resources/read", Status: analytics.StatusOK}
			if tool != "" {
				it.Method, it.Name = "tools/call", tool
			}
			if i < errors {
				it.Status = analytics.StatusError
			}
			rows = append(rows, analytics.StoredRow{AccountID: "acc", MCPID: mcp, Node: "slo", Seq: uint64(len(rows)), ReceivedAt: at, Item: it})
		}
	}
	add("mcp-s", "search", to.Add(-2*time.Minute), 10, 4)    // every window
	add("mcp-s", "", to.Add(-50*time.Minute), 20, 1)         // 1 h and up, not the tool's
	add("mcp-s", "search", to.Add(-48*time.Hour), 30, 3)     // 3 d and the window
	add("mcp-s", "search", to.Add(-10*24*time.Hour), 40, 0)  // the window only
	add("mcp-s", "search", to.Add(-40*24*time.Hour), 50, 50) // outside
	add("mcp-other", "search", to.Add(-time.Minute), 60, 60) // another MCP
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	qs := []analytics.SLIQuery{{MCPID: "mcp-s", Tool: "search", WindowDays: 28}, {MCPID: "mcp-s", WindowDays: 7}, {MCPID: "mcp-none", WindowDays: 28}}
	got, err := db.SLICounts(ctx, to, []int{5, 60}, []int{72}, qs)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ m5, m60, h72, window analytics.SLICounts }{
		{analytics.SLICounts{Total: 10, Bad: 4}, analytics.SLICounts{Total: 10, Bad: 4}, analytics.SLICounts{Total: 40, Bad: 7}, analytics.SLICounts{Total: 80, Bad: 7}},
		{analytics.SLICounts{Total: 10, Bad: 4}, analytics.SLICounts{Total: 30, Bad: 5}, analytics.SLICounts{Total: 60, Bad: 8}, analytics.SLICounts{Total: 60, Bad: 8}},
		{},
	}
	for i, w := range want {
		g := got[i]
		if g.Minutes[5] != w.m5 || g.Minutes[60] != w.m60 || g.Hours[72] != w.h72 || g.Hours[qs[i].WindowDays*24] != w.window {
			t.Errorf("query %d: %+v, want %+v", i, g, w)
		}
	}
	series, err := db.SLISeries(ctx, to, qs[0])
	if err != nil {
		t.Fatal(err)
	}
	var total, bad int64
	for _, p := range series {
		total, bad = total+p.Total, bad+p.Bad
	}
	if len(series) != 29 || total != 80 || bad != 7 || series[len(series)-1].Total != 10 {
		t.Fatalf("series of %d days, %d calls, %d bad: %+v", len(series), total, bad, series)
	}
}
