package clickhouse_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// BenchmarkExport times the export's read and encoding path (Export into
// an ExportWriter writing to io.Discard through a 64 KiB buffer, as the
// handler does) over the big MCP of a seeded history: 4M events (or
// TELEMETRY_BENCH_EVENTS) over 30 days, half of them on seed-mcp-0000.
// The database, named by TELEMETRY_BENCH_CLICKHOUSE_DB, is kept between
// runs and seeded only when empty, as BenchmarkLongRangeReads does; a
// database seeded with other options gives other figures. Skipped without
// that variable.
func BenchmarkExport(b *testing.B) {
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
	r := analytics.NewRange(end.AddDate(0, 0, -29), end)
	const mcp = "seed-mcp-0000"
	if ov, err := db.Overview(ctx, mcp, r); err != nil {
		b.Fatal(err)
	} else if ov.Calls == 0 {
		events := int64(4_000_000)
		if v, err := strconv.ParseInt(os.Getenv("TELEMETRY_BENCH_EVENTS"), 10, 64); err == nil {
			events = v
		}
		if err := chtest.SeedHistory(ctx, db, chtest.SeedOptions{Events: events, Days: 30, End: end, MCPs: 50, BigMCPShare: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
	if v, err := strconv.ParseUint(os.Getenv("TELEMETRY_BENCH_EXPORT_CHUNK"), 10, 64); err == nil {
		db.SetExportChunkRows(v) // to compare chunk sizes
	}
	for _, format := range []string{analytics.ExportNDJSON, analytics.ExportCSV, "none"} {
		b.Run(format, func(b *testing.B) {
			var rows int64
			cpu0 := cpuTime()
			for b.Loop() {
				var each func(*analytics.ExportedItem) error
				var ew *analytics.ExportWriter
				if format == "none" {
					each = func(*analytics.ExportedItem) error { rows++; return nil }
				} else {
					ew = analytics.NewExportWriter(bufio.NewWriterSize(io.Discard, 64<<10), format)
					each = func(it *analytics.ExportedItem) error { rows++; return ew.Write(it) }
				}
				if err := db.Export(ctx, mcp, r, each); err != nil {
					b.Fatal(err)
				}
				if ew != nil {
					if err := ew.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			// The process's CPU per row (user and system): the service's
			// share of the machine, whatever else runs on it.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(rows), "cpu-ns/row")
		})
	}
}

// cpuTime is the CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
