package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// TestAnalystBackfill: an installation holding data when migration 005
// arrives gets session_span (from session_daily), the breakdown rollups
// and the hourly rollups (from events) backfilled, once; timelines,
// breakdowns and hourly series then agree with the oracle, also after the
// migration runs again.
func TestAnalystBackfill(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	half := len(rows) / 2
	if err := db.InsertRows(ctx, rows[:half]); err != nil {
		t.Fatal(err)
	}
	if err := db.ForgetAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.ForgetMigrations(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRows(ctx, rows[half:]); err != nil { // before 005: not in its rollups
		t.Fatal(err)
	}
	o := oracle{rows: rows}
	for i, pass := range []string{"backfilled", "migrated again"} {
		if i > 0 {
			if err := db.ForgetMigrations(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("%s: migrate: %v", pass, err)
		}
		t.Run(pass, func(t *testing.T) {
			for _, session := range []string{"a-s1", "a-midnight", "m-s0"} {
				got, err := walkTimeline(t, db, mcpA, session, analytics.TimeWindow{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				sameJSON(t, session, got, o.timeline(mcpA, session, analytics.TimeWindow{}))
			}
			for _, r := range []analytics.Range{week, analytics.NewRange(date(2025, 10, 15), date(2026, 4, 20))} {
				for _, by := range []string{"tool", "client_name", "error_type"} {
					q, _ := analytics.ParseBreakdownQuery(by, "", "", "", "", 2)
					got, err := db.Breakdown(ctx, mcpA, r, q)
					if err != nil {
						t.Fatal(err)
					}
					want, other := o.breakdown(mcpA, r, q)
					where := fmt.Sprintf("%s %s", by, r.FromDate())
					if len(got.Items) != len(want) || (got.Other == nil) != (other == nil) {
						t.Fatalf("%s: %+v, want %+v", where, got, want)
					}
					for i, g := range got.Items {
						checkFigures(t, where+" "+g.Value, g.Figures, want[i].agg)
					}
					if other != nil {
						checkFigures(t, where+" other", *got.Other, *other)
					}
				}
			}
			r := analytics.NewRange(day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 3))
			series, err := db.OverviewHourly(ctx, mcpA, r)
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range series {
				start := r.From.Add(time.Duration(i) * time.Hour)
				eq(t, start.String()+" calls", h.Calls, aggregate(o.inWindow(mcpA, start, start.Add(time.Hour), nil)).calls)
			}
		})
	}
}
