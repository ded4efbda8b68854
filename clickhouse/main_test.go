package clickhouse_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestMain runs the tests, each on a database of its own, several at once
// (testenv.RaiseParallel), and removes ClickHouse 26's data after them
// (ProveOn26).
func TestMain(m *testing.M) {
	testenv.RaiseParallel(6)
	code := m.Run()
	clickhouse.CleanUpProof()
	os.Exit(code)
}

// openTestDB opens a fresh, migrated database that is dropped when the test
// ends; in cluster mode when TELEMETRY_TEST_CLICKHOUSE_CLUSTER names a
// cluster of the test server (`make test-cluster` runs the package so).
// Options change the configuration first.
func openTestDB(t testing.TB, options ...func(*clickhouse.Config)) *clickhouse.DB {
	t.Helper()
	return openDB(t, true, options...)
}

// openUnprovenTestDB is openTestDB without the ClickHouse 26 proof, for a
// test whose volume (tens of thousands of rows) the proof's mirror would
// make slow, and whose statements other tests prove.
func openUnprovenTestDB(t testing.TB) *clickhouse.DB {
	t.Helper()
	return openDB(t, false)
}

func openDB(t testing.TB, prove bool, options ...func(*clickhouse.Config)) *clickhouse.DB {
	t.Helper()
	return openDBAt(t, prove, 0, options...)
}

// openDBAt is openDB migrated up to version only (0: every migration).
func openDBAt(t testing.TB, prove bool, version uint32, options ...func(*clickhouse.Config)) *clickhouse.DB {
	t.Helper()
	addr := testenv.ClickHouseAddr(t)
	// Generous: the package's tests migrate side by side, and ClickHouse
	// 26 (the proof) takes their statements one at a time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := clickhouse.Config{Addr: []string{addr}, Database: testenv.Name("t"),
		Cluster: testenv.ClickHouseCluster(), Replicated: testenv.ClickHouseReplicated()}
	for _, o := range options {
		o(&cfg)
	}
	db, err := clickhouse.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if prove {
		clickhouse.ProveOn26(t, db)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := chtest.DropDatabase(ctx, db); err != nil {
			t.Errorf("drop database: %v", err)
		}
		db.Close()
	})
	migrate := db.Migrate
	if version > 0 {
		migrate = func(ctx context.Context) error { return db.MigrateTo(ctx, version) }
	}
	if err := migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}
