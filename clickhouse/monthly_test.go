package clickhouse_test

import (
	"context"
	"testing"
)

// TestMonthlyBackfill: an installation that already holds data when
// migration 004 arrives gets monthly rollups backfilled from its daily
// ones, once: every read then agrees with the oracle, also after the
// migration runs again (the backfill is skipped for a table with rows).
func TestMonthlyBackfill(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	half := len(rows) / 2
	if err := db.InsertRows(ctx, rows[:half]); err != nil {
		t.Fatal(err)
	}
	if err := db.ForgetMonthly(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.ForgetMigrations(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.InsertRows(ctx, rows[half:]); err != nil { // before 004: into the daily rollups only
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
			t.Run("tools", func(t *testing.T) { testTools(t, db, o) })
			t.Run("tool", func(t *testing.T) { testTool(t, db, o) })
			t.Run("insights", func(t *testing.T) { testInsights(t, db, o) })
		})
	}
}
