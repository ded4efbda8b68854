package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
)

// runReleases measures the release reads (docs/releases.md) of one MCP
// holding -events events over -days days in -releases releases: it
// migrates its own database, seeds it through INSERT INTO events SELECT
// (so release_hourly fills by its view, as ingest fills it), then times
// the comparison of the last two releases, the verdict of the latest and
// the releases list over the whole range, at the store (the route adds
// authentication and JSON encoding, under a millisecond).
func runReleases(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench releases", flag.ContinueOnError)
	addr := fs.String("clickhouse", "127.0.0.1:9000", "ClickHouse native address")
	db := fs.String("database", "bench_releases", "database to create, seed and drop")
	events := fs.Int64("events", 50_000_000, "events of the MCP (0: measure what -database holds)")
	days := fs.Int("days", 30, "days of history, ending today")
	releases := fs.Int("releases", 6, "releases over the history, in time order")
	reps := fs.Int("reps", 20, "timed reads of each kind (after one warm-up)")
	keep := fs.Bool("keep", false, "keep the database afterwards")
	outPath := fs.String("out", "", "append the figures to this results file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{*addr}, Database: *db})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	if !*keep {
		defer func() { _ = chtest.DropDatabase(context.WithoutCancel(ctx), store) }()
	}
	const mcp = "bench-release-mcp"
	if *events > 0 {
		fmt.Fprintf(out, "seeding %d events over %d days in %d releases into %s\n", *events, *days, *releases, *db)
		start := time.Now()
		if err := chtest.SeedHistory(ctx, store, chtest.SeedOptions{Events: *events, Days: *days, MCPs: 1, MCPIDs: []string{mcp},
			Releases: *releases, BatchSize: 1_000_000}); err != nil {
			return err
		}
		fmt.Fprintf(out, "  seeded in %.0f s (%.0f events/s)\n", time.Since(start).Seconds(), float64(*events)/time.Since(start).Seconds())
	}
	conn, err := openCH(ctx, *addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	var rows uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+*db+".release_hourly WHERE mcp_id = ?", mcp).Scan(&rows); err != nil {
		return err
	}
	cmp := analytics.ReleaseComparer{Reader: store.Reads}
	today := analytics.UTCDay(time.Now())
	r := analytics.NewRange(today.AddDate(0, 0, -(*days-1)), today)
	var verdict string
	var figs []figure
	fmt.Fprintf(out, "release reads of %s (%d release_hourly rows, before merges), p50/p95 over %d runs:\n", mcp, rows, *reps)
	for _, read := range []struct {
		name string
		f    func() error
	}{
		{"release compare", func() error {
			c, err := cmp.Compare(ctx, mcp, "", "")
			if err == nil {
				verdict = c.Verdict
			}
			return err
		}},
		{"release verdict", func() error { _, err := cmp.Verdict(ctx, mcp, fmt.Sprintf("2.%d.0", *releases-1)); return err }},
		{"releases list 30d", func() error { _, err := store.Reads.Releases(ctx, mcp, r); return err }},
	} {
		ds, err := timeN(*reps, read.f)
		if err != nil {
			return fmt.Errorf("%s: %w", read.name, err)
		}
		p50, p95 := percentile(ds, 50), percentile(ds, 95)
		fmt.Fprintf(out, "  %-20s p50 %7.1f ms  p95 %7.1f ms\n", read.name, ms(p50), ms(p95))
		figs = append(figs, figure{"releases", read.name, "p50_ms", ms(p50)}, figure{"releases", read.name, "p95_ms", ms(p95)})
	}
	fmt.Fprintf(out, "  comparison verdict: %s (goal: compare p95 < 300 ms for 50 M events over 30 days)\n", verdict)
	figs = append(figs, figure{"releases", "events", "count", float64(*events)})
	return recorder{*outPath}.record(figs...)
}
