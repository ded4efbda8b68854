package clickhouse_test

import (
	"context"
	"testing"

	"github.com/mcpscope/telemetry/analytics"
)

// TestProtocolVersionMigration: an installation holding items when
// migration 006 arrives gains the protocol_version column (its stored
// items have none: "") and protocol_daily backfilled from events, once;
// items stored afterwards keep theirs; the breakdown by protocol_version
// then agrees with the oracle, also after the migration runs again.
func TestProtocolVersionMigration(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	half := len(rows) / 2
	if err := db.InsertRows(ctx, rows[:half]); err != nil {
		t.Fatal(err)
	}
	if err := db.ForgetProtocolVersion(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.ForgetMigrations(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range rows[:half] { // stored before the column existed
		rows[i].Item.ProtocolVersion = ""
	}
	o := oracle{rows: rows}
	for i, pass := range []string{"migrated", "migrated again"} {
		if i > 0 {
			if err := db.ForgetMigrations(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("%s: migrate: %v", pass, err)
		}
		if i == 0 {
			if err := db.InsertRows(ctx, rows[half:]); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(pass, func(t *testing.T) {
			for _, r := range []analytics.Range{week, analytics.NewRange(date(2025, 10, 15), date(2026, 4, 20))} {
				for _, status := range []string{"", "error"} {
					q, _ := analytics.ParseBreakdownQuery("protocol_version", "", "", "", status, 0)
					got, err := db.Breakdown(ctx, mcpA, r, q)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := o.breakdown(mcpA, r, q)
					if len(got.Items) != len(want) || len(want) < 2 {
						t.Fatalf("%s %s: %+v, want %+v", r.FromDate(), status, got.Items, want)
					}
					for i, g := range got.Items {
						if g.Value != want[i].value {
							t.Fatalf("items[%d] = %q, want %q", i, g.Value, want[i].value)
						}
						checkFigures(t, r.FromDate()+" "+status+" "+g.Value, g.Figures, want[i].agg)
					}
				}
			}
		})
	}
}
