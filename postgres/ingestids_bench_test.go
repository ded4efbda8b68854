package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIngestIDsClaim claims new ids as ingest does under load: 8
// payloads of 500 ids at a time (each b.N is one payload), into a table
// prefilled with BENCH_CLAIMS_PREFILL rows (default 2,000,000, spread
// over the window in insertion order), the log's answer already there.
// It reports PostgreSQL's CPU per id (its client backends on this
// database, from /proc: the server must run on this machine), the WAL
// bytes and full-page images per id (the whole server's: other sessions
// count too), the test process's CPU per id and the ids per group.
//
//	go test -run '^$' -bench IngestIDsClaim -benchtime 400x ./postgres/
func BenchmarkIngestIDsClaim(b *testing.B) {
	db := testDB(b)
	ctx := context.Background()
	prefill := 2_000_000
	if s := os.Getenv("BENCH_CLAIMS_PREFILL"); s != "" {
		prefill, _ = strconv.Atoi(s)
	}
	now := time.Now()
	// Once per process: the benchmark runs with b.N = 1 first.
	claimBenchSetup.Do(func() { prefillClaims(b, db, prefill, now) })
	const perPayload, workers = 500, 8
	payloads := make([][]string, b.N)
	for i := range payloads {
		payloads[i] = make([]string, perPayload)
		for j := range payloads[i] {
			payloads[i][j] = fmt.Sprintf("%08x-bench-%d-%d", now.UnixNano()&0xffffffff, i, j)
		}
	}
	r := NewIngestIDs(db, 24*time.Hour)
	if _, err := db.Pool.Exec(ctx, `CHECKPOINT`); err != nil {
		b.Fatal(err)
	}
	before := pgUsage(b, db)
	cpu0 := processCPU()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
				durable := make(chan error, 1)
				durable <- nil
				own, err := r.Claim(ctx, "bench", "mcp-bench", payloads[i], now.Add(time.Duration(i)), durable)
				if err != nil || len(own) != perPayload {
					b.Errorf("claim %d: %d owned, %v", i, len(own), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	after := pgUsage(b, db)
	n := float64(b.N * perPayload)
	b.ReportMetric(float64(after.cpu-before.cpu)/n, "pg-µs/id")
	b.ReportMetric(float64(after.wal-before.wal)/n, "wal-B/id")
	b.ReportMetric(float64(after.fpi-before.fpi)/n, "fpi/id")
	b.ReportMetric(float64(processCPU()-cpu0)/n, "go-µs/id")
	b.ReportMetric(n/float64(r.groups.Load()), "ids/group")
}

type pgStats struct {
	cpu      int64 // µs of the database's client backends
	wal, fpi int64
}

// pgUsage reads the CPU of this database's client backends from /proc and
// the server's WAL position and full-page image count.
func pgUsage(b *testing.B, db *DB) pgStats {
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend'`)
	if err != nil {
		b.Fatal(err)
	}
	var s pgStats
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		s.cpu += procCPU(pid)
	}
	rows.Close()
	if err := db.Pool.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0', wal_fpi FROM pg_stat_wal`).Scan(&s.wal, &s.fpi); err != nil {
		b.Fatal(err)
	}
	return s
}

// procCPU is the user and system CPU of a process in µs (0 when gone).
func procCPU(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * 10000 // USER_HZ 100
}

// processCPU is this process's user and system CPU in µs.
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
}

var claimBenchSetup sync.Once

// prefillClaims fills ingest_claims with n rows received over the last
// day, in insertion order, then runs BENCH_CLAIMS_SQL (a variant's
// statements) and vacuums.
func prefillClaims(b *testing.B, db *DB, n int, now time.Time) {
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `TRUNCATE ingest_claims`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO ingest_claims (h, node, at)
		SELECT md5('prefill' || i)::uuid, 1, $2::bigint - (86400000000000 / $1) * ($1 - i)
		FROM generate_series(1, $1::bigint) AS i`, n, now.UnixNano()); err != nil {
		b.Fatal(err)
	}
	// BENCH_CLAIMS_SQL: statements run after the prefill (variants).
	if q := os.Getenv("BENCH_CLAIMS_SQL"); q != "" {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
		db.Pool.Reset()
	}
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE ingest_claims`); err != nil {
		b.Fatal(err)
	}
}
