package clickhouse_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// BenchmarkLongRangeReads times the 365-day reads of the big MCP of a
// seeded history: 20M events (or TELEMETRY_BENCH_EVENTS) over 365 days,
// half of them on seed-mcp-0000.
// The database, named by TELEMETRY_BENCH_CLICKHOUSE_DB, is kept between
// runs (seeding takes minutes): it is seeded only when empty, and
// migrated on every run, so that a run after a schema change measures the
// backfilled rollups of the same data. Skipped without that variable.
func BenchmarkLongRangeReads(b *testing.B) {
	name := os.Getenv("TELEMETRY_BENCH_CLICKHOUSE_DB")
	if name == "" {
		b.Skip("TELEMETRY_BENCH_CLICKHOUSE_DB names the kept benchmark database")
	}
	ctx := context.Background()
	db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{testenv.ClickHouseAddr(b)}, Database: name,
		Cluster: testenv.ClickHouseCluster()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	end := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	r := analytics.NewRange(end.AddDate(0, 0, -364), end)
	const mcp = "seed-mcp-0000"
	if ov, err := db.Overview(ctx, mcp, r); err != nil {
		b.Fatal(err)
	} else if ov.Calls == 0 {
		events := int64(20_000_000)
		if v, err := strconv.ParseInt(os.Getenv("TELEMETRY_BENCH_EVENTS"), 10, 64); err == nil {
			events = v
		}
		if err := chtest.SeedHistory(ctx, db, chtest.SeedOptions{Events: events, Days: 365, End: end, MCPs: 50, BigMCPShare: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
	reads := map[string]func() error{
		"Overview": func() error { _, err := db.Overview(ctx, mcp, r); return err },
		"Tools":    func() error { _, err := db.Tools(ctx, mcp, r); return err },
		"Insights": func() error { _, err := db.Insights(ctx, mcp, r); return err },
	}
	for _, n := range []string{"Overview", "Tools", "Insights"} {
		b.Run(n, func(b *testing.B) {
			for b.Loop() {
				if err := reads[n](); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
