package clickhouse_test

import (
	"context"
	"testing"
)

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	// A second run (another instance starting) must be a no-op.
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
}
