package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// The SLO indicator reads (docs/slos.md), proven on ClickHouse 26 too:
// the minute windows from events, the hour windows from slo_daily (whole
// days) and slo_hourly (the hours at either end), the daily series from
// slo_hourly; each MCP and tool under its own key; availability bad by
// the SLO's error kinds (an error without a kind counts), latency bad
// over the threshold among the items with a duration. Exact counts.
func TestSLICountsAndSeries(t *testing.T) {
	t.Parallel()
	db := openDB(t, true)
	ctx := context.Background()
	to := time.Date(2026, 11, 20, 12, 30, 0, 0, time.UTC) // windows end at 13:00
	var rows []analytics.StoredRow
	// add stores n items of the tool ("": resources/read) at at, the
	// first of them failing with kinds (one each; "" without a kind),
	// each taking dur(i) ms (nil: no duration).
	add := func(mcp, tool string, at time.Time, n int, kinds []string, dur func(i int) *float64) {
		for i := range n {
			it := analytics.Item{ID: fmt.Sprintf("%s-%d", at.Format("0102150405"), i), Timestamp: at,
				SessionID: "s", Method: "resources/read", Status: analytics.StatusOK, DurationMs: dur(i)}
			if tool != "" {
				it.Method, it.Name = "tools/call", tool
			}
			if i < len(kinds) {
				it.Status, it.ErrorKind = analytics.StatusError, kinds[i]
			}
			rows = append(rows, analytics.StoredRow{AccountID: "acc", MCPID: mcp, Node: "slo", Seq: uint64(len(rows)), ReceivedAt: at, Item: it})
		}
	}
	ms := func(f func(i int) float64) func(int) *float64 { return func(i int) *float64 { v := f(i); return &v } }
	none := func(int) *float64 { return nil }
	add("mcp-s", "search", to.Add(-2*time.Minute), 10, []string{"tool_error", "tool_error", "invalid_params", "timeout"},
		ms(func(i int) float64 { return float64(i) * 100 })) // 0..900 ms: 4 at or under 300, 1 under 50
	add("mcp-s", "", to.Add(-50*time.Minute), 20, []string{"exception"}, ms(func(int) float64 { return 40 }))
	add("mcp-s", "search", to.Add(-48*time.Hour), 30, []string{"unknown_tool", "unknown_tool", "unknown_tool"}, none)
	add("mcp-s", "search", to.Add(-10*24*time.Hour), 40, nil, ms(func(int) float64 { return 2000 }))
	start := time.Date(2026, 10, 23, 13, 0, 0, 0, time.UTC) // the 28-day window's first hour
	add("mcp-s", "search", start.Add(10*time.Minute), 5, []string{"", "", "", "", ""}, ms(func(int) float64 { return 10 }))
	add("mcp-s", "search", start.Add(-10*time.Minute), 7, []string{"tool_error"}, none) // just before
	add("mcp-s", "search", to.Add(-40*24*time.Hour), 50, []string{"tool_error"}, none)  // outside
	add("mcp-other", "search", to.Add(-time.Minute), 60, []string{"tool_error"}, none)  // another MCP
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	byDefault := []string{"tool_error", "exception", "method_not_found", "timeout", "cancelled", "auth", "internal", "other"}
	qs := []analytics.SLIQuery{
		{MCPID: "mcp-s", Tool: "search", ErrorKinds: byDefault, WindowDays: 28},
		{MCPID: "mcp-s", ErrorKinds: []string{"tool_error"}, WindowDays: 7},
		{MCPID: "mcp-s", Tool: "search", ThresholdMs: 300, WindowDays: 28},
		{MCPID: "mcp-s", ThresholdMs: 50, WindowDays: 7},
		{MCPID: "mcp-none", WindowDays: 28},
	}
	got, err := db.SLICounts(ctx, to, []int{5, 60}, []int{72}, qs)
	if err != nil {
		t.Fatal(err)
	}
	c := func(total, bad int64) analytics.SLICounts { return analytics.SLICounts{Total: total, Bad: bad} }
	want := []struct{ m5, m60, h72, window analytics.SLICounts }{
		// tool_error ×2 and timeout bad, invalid_params and unknown_tool
		// not; the window adds the 40 and the 5 errors without a kind.
		{c(10, 3), c(10, 3), c(40, 3), c(85, 8)},
		// tool_error only: the exception and unknown_tool do not count.
		{c(10, 2), c(30, 2), c(60, 2), c(60, 2)},
		// timed items only; 6 of the 10 over 300 ms, the 40 at 2 s.
		{c(10, 6), c(10, 6), c(10, 6), c(55, 46)},
		// 50 ms: the 20 at 40 ms and the one at 0 ms are good.
		{c(10, 9), c(30, 9), c(30, 9), c(30, 9)},
		{},
	}
	for i, w := range want {
		g := got[i]
		if g.Minutes[5] != w.m5 || g.Minutes[60] != w.m60 || g.Hours[72] != w.h72 || g.Hours[qs[i].WindowDays*24] != w.window {
			t.Errorf("query %d: %+v, want %+v", i, g, w)
		}
	}
	for i, wantTotal := range []int64{85, 55} {
		series, err := db.SLISeries(ctx, to, qs[2*i])
		if err != nil {
			t.Fatal(err)
		}
		var total, bad int64
		for _, p := range series {
			total, bad = total+p.Total, bad+p.Bad
		}
		w := want[2*i].window
		if len(series) != 29 || total != wantTotal || bad != w.Bad || series[0].Total != 5 || series[len(series)-1].Total != 10 {
			t.Errorf("series %d: %d days, %d calls, %d bad: %+v", i, len(series), total, bad, series)
		}
	}
}
