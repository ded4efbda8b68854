package clickhouse_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
)

// BenchmarkInsertOn26 measures the insert path on ClickHouse 26 (libchdb,
// in this process, as the schema proof runs it): the CPU per million items
// of inserts into events in batches of 50,000 with every view of the
// schema, less the CPU of generating the same rows into a Null table, then
// the bytes per item of every table after OPTIMIZE FINAL. The rows are
// chtest's synthetic history with UUID ids (generateUUIDv4, stored in
// id_uuid as the service stores the SDKs' ids). TELEMETRY_BENCH_ROWS
// [500000] sets the rows. scripts/bench.sh runs it in its chstore part;
// the figures are in docs/capacity.md.
func BenchmarkInsertOn26(b *testing.B) {
	if os.Getenv(clickhouse.EnvLibCHDB) == "" {
		b.Skip(clickhouse.EnvLibCHDB + " not set: ClickHouse 26 is not loaded")
	}
	rows := int64(500_000)
	if v := os.Getenv("TELEMETRY_BENCH_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("TELEMETRY_BENCH_ROWS=%q", v)
		}
		rows = n
	}
	for range b.N {
		db := openTestDB(b) // migrated on 18.16 and, mirrored, on 26
		name := db.Database()
		run26 := func(q string) string {
			out, err := clickhouse.QueryOn26(q)
			if err != nil {
				b.Fatalf("ClickHouse 26: %v\n%s", err, q)
			}
			return out
		}
		run26(fmt.Sprintf("CREATE TABLE %[1]s.null_events AS %[1]s.events ENGINE = Null", name))
		qs, err := chtest.SeedQueries(name, chtest.SeedOptions{Events: rows, Days: 1, MCPs: 4, BigMCPShare: 0.5,
			End: time.Now(), BatchSize: 50_000})
		if err != nil {
			b.Fatal(err)
		}
		uuidIDs := strings.NewReplacer("lower(hex(hn)) AS id,", "'' AS id,",
			"toUUID('00000000-0000-0000-0000-000000000000') AS id_uuid", "generateUUIDv4(hn) AS id_uuid")
		timed := func(into string) float64 {
			t0 := cpuSeconds(b)
			for _, q := range qs {
				q = uuidIDs.Replace(q)
				run26(strings.Replace(q, "INSERT INTO "+name+".events ", "INSERT INTO "+name+"."+into+" ", 1))
			}
			return cpuSeconds(b) - t0
		}
		gen := timed("null_events")
		ins := timed("events")
		t0 := cpuSeconds(b)
		tables := strings.Fields(run26(fmt.Sprintf("SELECT name FROM system.tables WHERE database = '%s' AND engine LIKE '%%MergeTree'", name)))
		for _, t := range tables {
			run26(fmt.Sprintf("OPTIMIZE TABLE %s.%s FINAL", name, t))
		}
		merge := cpuSeconds(b) - t0
		bytes, _ := strconv.ParseFloat(strings.TrimSpace(run26(fmt.Sprintf("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '%s' AND active", name))), 64)
		ids, _ := strconv.ParseFloat(strings.TrimSpace(run26(fmt.Sprintf("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '%s' AND table = 'event_ids' AND active", name))), 64)
		stored, _ := strconv.ParseFloat(strings.TrimSpace(run26(fmt.Sprintf("SELECT count() FROM %s.events", name))), 64)
		if stored != float64(rows) {
			b.Fatalf("ClickHouse 26 holds %.0f events of %d", stored, rows)
		}
		b.ReportMetric((ins-gen)/float64(rows)*1e6, "ch26_cpu_s/M_items")
		b.ReportMetric(merge/float64(rows)*1e6, "ch26_optimize_cpu_s/M_items")
		b.ReportMetric(bytes/float64(rows), "ch26_B/item")
		b.ReportMetric(ids/float64(rows), "ch26_event_ids_B/item")
	}
}

// cpuSeconds is this process's user and system CPU time: libchdb's work,
// as ClickHouse 26 runs in the process.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
