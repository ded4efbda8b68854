package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/client"
)

// runDirect is the baseline the HTTP rate is compared with: rows generated
// exactly as the load generator does, inserted straight into ClickHouse
// with the store's own InsertRows (events and, through the views, every
// rollup), in batches the size the flusher sends. Only the inserts are
// timed, not the generation.
func runDirect(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench direct", flag.ContinueOnError)
	addr := fs.String("clickhouse", "127.0.0.1:9000", "ClickHouse native address")
	db := fs.String("database", "bench_direct", "database to create, migrate and fill (not the service's)")
	rows := fs.Int("rows", 2_000_000, "rows to insert")
	batch := fs.Int("batch", 50_000, "rows per insert (the service's ingest.flush_max_rows)")
	outPath := fs.String("out", "", "append the figures to this results file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rows <= 0 || *batch <= 0 {
		return errors.New("-rows and -batch must be positive")
	}
	store, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{*addr}, Database: *db})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrator.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "direct insert: %d rows into %s (events and rollups) in batches of %d\n", *rows, *db, *batch)

	g := newGenerator(1, "d"+strconv.FormatInt(time.Now().Unix(), 36)+"-")
	buf := make([]analytics.StoredRow, 0, *batch)
	var spent time.Duration
	var seq uint64
	p := progress{out: out, interval: 5 * time.Second, last: time.Now()}
	for done := 0; done < *rows; {
		n := min(*batch, *rows-done)
		now := time.Now()
		seq++
		buf = buf[:0]
		for range n {
			it := g.item(now)
			it.ID = client.NewID()
			buf = append(buf, analytics.StoredRow{AccountID: "bench-direct", MCPID: "bench-direct", Node: "direct",
				Seq: seq, ReceivedAt: now, Item: it})
		}
		t0 := time.Now()
		if err := store.Sink.InsertRows(ctx, buf); err != nil {
			return err
		}
		spent += time.Since(t0)
		done += n
		p.printf(done == *rows, "  %d rows, %.0f rows/s\n", done, float64(done)/spent.Seconds())
	}
	rate := float64(*rows) / spent.Seconds()
	fmt.Fprintf(out, "  %d rows in %.1f s of inserts: %.0f rows/s\n", *rows, spent.Seconds(), rate)
	return recorder{*outPath}.record(figure{"direct", "direct insert", "rows_per_s", rate})
}
