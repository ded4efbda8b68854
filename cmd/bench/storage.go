package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// runStorage prints and records the bytes on disk per stored item of the
// events table and of every rollup: first with the parts as they are right
// after ingest, then after OPTIMIZE ... FINAL of every table (the size the
// data settles at once ClickHouse has merged it, which the capacity model
// uses).
func runStorage(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench storage", flag.ContinueOnError)
	chAddr := fs.String("clickhouse", "127.0.0.1:9000", "ClickHouse address")
	db := fs.String("database", "telemetry", "the service's ClickHouse database")
	optimize := fs.Bool("optimize", true, "measure again after OPTIMIZE FINAL of every table")
	outPath := fs.String("out", "", "append the figures to this results file")
	section := fs.String("section", "storage", "section of the figures")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := openCH(ctx, *chAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	measure := func() ([]storedTable, uint64, error) { return storedTables(ctx, conn, *db) }
	var figs []figure
	report := func(metric, what string) ([]storedTable, error) {
		ts, items, err := measure()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "bytes on disk per stored item (%d items in events), %s:\n", items, what)
		var total uint64
		for _, t := range ts {
			total += t.bytes
			per := float64(t.bytes) / float64(items)
			fmt.Fprintf(out, "  %-28s %12d rows %14d bytes %8.2f B/item\n", t.name, t.rows, t.bytes, per)
			figs = append(figs, figure{*section, t.name, metric, per})
		}
		fmt.Fprintf(out, "  %-28s %12s      %14d bytes %8.2f B/item\n", "all tables", "", total, float64(total)/float64(items))
		figs = append(figs, figure{*section, "all tables", metric, float64(total) / float64(items)},
			figure{*section, "events", "items", float64(items)})
		return ts, nil
	}
	ts, err := report("bytes_per_item", "parts as they are")
	if err != nil {
		return err
	}
	if *optimize {
		for _, t := range ts {
			q := fmt.Sprintf("OPTIMIZE TABLE %s.`%s` FINAL", *db, strings.ReplaceAll(t.name, "`", "\\`"))
			if err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		if _, err := report("bytes_per_item_optimized", "after OPTIMIZE FINAL of every table"); err != nil {
			return err
		}
	}
	return recorder{*outPath}.record(figs...)
}

// storedTable is a table's rows and bytes on disk, over its active parts.
type storedTable struct {
	name        string
	rows, bytes uint64
}

// storedTables measures every table of the database db and returns them
// with the count of stored items (the events table's rows).
func storedTables(ctx context.Context, conn driver.Conn, db string) ([]storedTable, uint64, error) {
	rows, err := conn.Query(ctx, `SELECT table, sum(rows), sum(bytes_on_disk) FROM system.parts
			WHERE database = ? AND active GROUP BY table ORDER BY table`, db)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var ts []storedTable
	var items uint64
	for rows.Next() {
		var t storedTable
		if err := rows.Scan(&t.name, &t.rows, &t.bytes); err != nil {
			return nil, 0, err
		}
		if t.name == "events" {
			items = t.rows
		}
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if items == 0 {
		return nil, 0, errors.New("no events stored: run the ingest part first")
	}
	return ts, items, nil
}
