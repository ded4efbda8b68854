package clickhouse_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/mcpscope/telemetry/clickhouse"
)

// TestRollupInputUpgrade: an installation migrated to 006 that holds items
// keeps every rollup's totals through migration 008 (the views change,
// the rows stay), and the items inserted afterwards, through
// rollup_input, add to the rollups exactly what 006's views on events add
// to a twin installation left at 006: counts, sums, distinct counts and
// last-seen times equal, the t-digest percentiles within 1% (merged
// digests, docs/analyst-reads.md "Rollups on insert").
func TestRollupInputUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, upgraded := openDBAt(t, false, 6), openDBAt(t, true, 6)
	rows := fixtureRows()
	half := len(rows) / 2
	for _, db := range []*clickhouse.DB{old, upgraded} {
		if err := db.AddFailureColumns(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, db := range []*clickhouse.DB{old, upgraded} {
		if err := db.InsertRows(ctx, rows[:half]); err != nil {
			t.Fatal(err)
		}
	}
	rollups := []string{"mcp_daily", "mcp_hourly", "tool_daily", "tool_hourly", "tool_monthly", "tool_client_daily",
		"client_daily", "client_monthly", "protocol_daily", "breakdown_daily"}
	compare := func(when string) {
		t.Helper()
		for _, r := range rollups {
			want, wantQ, err := old.RollupTotals(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			got, gotQ, err := upgraded.RollupTotals(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) < 3 || !slices.Equal(got, want) {
				t.Errorf("%s: %s:\n got %q\nwant %q", when, r, got, want)
				continue
			}
			for i := range wantQ {
				for j := range wantQ[i] {
					if g, w := gotQ[i][j], wantQ[i][j]; len(gotQ[i]) != len(wantQ[i]) || math.Abs(g-w) > 0.01*math.Abs(w) {
						t.Errorf("%s: %s %s: percentiles %v, want %v", when, r, want[i], gotQ[i], wantQ[i])
						break
					}
				}
			}
		}
	}
	// Up to 008 only: 009 adds a breakdown dimension (error_kind) that
	// 006 does not have.
	if err := upgraded.MigrateTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	compare("after the migration")
	for _, db := range []*clickhouse.DB{old, upgraded} {
		if err := db.InsertRows(ctx, rows[half:]); err != nil {
			t.Fatal(err)
		}
	}
	compare("after inserts on either side")
}
