package main

import (
	"fmt"
	"io"
	"strings"
)

// The ClickHouse goals of issue 40 (docs/benchmarks.md, "ClickHouse CPU
// and bytes per item"): the CPU ClickHouse spends per million items
// stored (inserts, views and the merges they cause) and the bytes on disk
// per item after merges, measured by the chstore part of bench.sh for this
// build and the baseline build on the same server.
const (
	goalCHCPUPerM   = 5.0  // CPU s per million items, ClickHouse 18.16
	goalBytesPerItm = 60.0 // bytes per item after OPTIMIZE FINAL, all tables
)

// printClickHouseGoals prints the chstore figures of this build (figs)
// beside the baseline's (base, may be nil) with the goal and ok or a miss.
func printClickHouseGoals(out io.Writer, figs, base []figure, baseName string) {
	cpu, haveCPU := meanOf(figs, "chstore", "insert, views and merges", "clickhouse_cpu_s_per_m_rows")
	bytes, haveBytes := meanOf(figs, "chstore", "all tables", "bytes_per_item_optimized")
	if !haveCPU && !haveBytes {
		return
	}
	if baseName == "" {
		baseName = "baseline"
	}
	fmt.Fprintf(out, "ClickHouse per item (chstore: the direct insert into ClickHouse %s, views, merges), beside %s\n", chVersionNote, baseName)
	fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("  %-44s %-12s %-12s %-8s %-10s %s", "figure", "this build", "baseline", "ratio", "goal", "verdict"), " "))
	row := func(what string, this float64, haveThis bool, metric, name, format string, goal float64) {
		b, haveBase := meanOf(base, "chstore", name, metric)
		bs, r := "-", "-"
		if haveBase {
			bs = fmt.Sprintf(format, b)
			if b > 0 && haveThis {
				r = fmt.Sprintf("%.2fx", this/b)
			}
		}
		ts, verdict := "-", "-"
		if haveThis {
			ts, verdict = fmt.Sprintf(format, this), pass(this <= goal)
		}
		fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("  %-44s %-12s %-12s %-8s %-10s %s", what, ts, bs, r, fmt.Sprintf("<= "+format, goal), verdict), " "))
	}
	row("ClickHouse CPU s per million items", cpu, haveCPU, "clickhouse_cpu_s_per_m_rows", "insert, views and merges", "%.1f", goalCHCPUPerM)
	row("bytes per item after merges (all tables)", bytes, haveBytes, "bytes_per_item_optimized", "all tables", "%.1f", goalBytesPerItm)
	if ev, ok := meanOf(figs, "chstore", "event_ids", "bytes_per_item_optimized"); ok && haveBytes {
		fmt.Fprintf(out, "  (of which event_ids, the duplicate check's ids: %.1f B)\n", ev)
	}
}

// chVersionNote names the server the chstore part measures.
const chVersionNote = "18.16"
