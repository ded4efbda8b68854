package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// TestHourlySeries checks the hourly series of the overview and of tools
// against the raw items, hour by hour, zero-filled, across midnight (the
// 23:59:59.999 and 00:00:00.000 items of 03-03/03-04) and at the range's
// edges, and the start of every daily entry.
func TestHourlySeries(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	if err := db.InsertRows(ctx, rows[:len(rows)/2]); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRows(ctx, rows[len(rows)/2:]); err != nil {
		t.Fatal(err)
	}
	o := oracle{rows: rows}
	rs := []analytics.Range{
		analytics.NewRange(day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 3)), // across the midnight items
		week,
		analytics.NewRange(day0.AddDate(0, 0, -6), day0.AddDate(0, 0, 7)), // 14 days, the edge items
		analytics.NewRange(day0.AddDate(0, 0, 100), day0.AddDate(0, 0, 100)),
	}
	check := func(t *testing.T) {
		for _, r := range rs {
			where := r.FromDate() + ".." + r.ToDate()
			for _, mcp := range []string{mcpA, mcpB} {
				series, err := db.OverviewHourly(ctx, mcp, r)
				if err != nil {
					t.Fatal(err)
				}
				if len(series) != r.NumDays()*24 {
					t.Fatalf("%s %s: %d hours", mcp, where, len(series))
				}
				for i, h := range series {
					start := r.From.Add(time.Duration(i) * time.Hour)
					w := aggregate(o.inWindow(mcp, start, start.Add(time.Hour), nil))
					at := mcp + " " + start.Format(time.RFC3339)
					if !h.Start.Equal(start) || h.Date != dayOf(start) {
						t.Fatalf("%s: entry %d is %s %v", at, i, h.Date, h.Start)
					}
					eq(t, at+" calls", h.Calls, w.calls)
					eq(t, at+" errors", h.Errors, w.errors)
					distinct(t, at+" sessions", h.Sessions, w.sessions)
					distinct(t, at+" users", h.Users, w.users)
					pctl(t, at+" p95", w.durations, 0.95, h.P95Ms)
				}
			}
			for _, name := range []string{"search_docs", "edge", unicode, "nope"} {
				series, err := db.ToolHourly(ctx, mcpA, name, r)
				if err != nil {
					t.Fatal(err)
				}
				if len(series) != r.NumDays()*24 {
					t.Fatalf("%s %s: %d hours", name, where, len(series))
				}
				for i, h := range series {
					start := r.From.Add(time.Duration(i) * time.Hour)
					w := aggregate(o.inWindow(mcpA, start, start.Add(time.Hour), func(it analytics.Item) bool { return isTool(it) && it.Name == name }))
					at := name + " " + start.Format(time.RFC3339)
					if !h.Start.Equal(start) || h.Date != dayOf(start) {
						t.Fatalf("%s: entry %d is %s %v", at, i, h.Date, h.Start)
					}
					eq(t, at+" calls", h.Calls, w.calls)
					eq(t, at+" errors", h.Errors, w.errors)
					pctl(t, at+" p95", w.durations, 0.95, h.P95Ms)
				}
			}
		}
		// Hand-checked: the edge tool's two items land in 23:00 of 03-03
		// and 00:00 of 03-04.
		s, _ := db.ToolHourly(ctx, mcpA, "edge", rs[0])
		if s[23].Calls != 1 || *s[23].P95Ms != 5 || s[24].Calls != 1 || *s[24].P95Ms != 7 || s[22].Calls != 0 || s[22].P95Ms != nil {
			t.Errorf("edge hours 22..24: %+v %+v %+v", s[22], s[23], s[24])
		}
		// Daily entries start at midnight UTC.
		ov, _ := db.Overview(ctx, mcpA, week)
		tool, _ := db.Tool(ctx, mcpA, "search_docs", week)
		for i := range ov.Series {
			if !ov.Series[i].Start.Equal(day0.AddDate(0, 0, i)) || !tool.Series[i].Start.Equal(day0.AddDate(0, 0, i)) {
				t.Errorf("day %d starts %v / %v", i, ov.Series[i].Start, tool.Series[i].Start)
			}
		}
	}
	t.Run("unmerged", check)
	for _, table := range []string{"mcp_hourly", "tool_hourly"} {
		if err := db.OptimizeFinal(ctx, table); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("merged", check)
}

// inWindow is in over [from, end) instead of whole days.
func (o oracle) inWindow(mcp string, from, end time.Time, keep func(it analytics.Item) bool) []analytics.Item {
	var out []analytics.Item
	for _, row := range o.rows {
		t := row.Item.Timestamp
		if row.MCPID == mcp && !t.Before(from) && t.Before(end) && (keep == nil || keep(row.Item)) {
			out = append(out, row.Item)
		}
	}
	return out
}
