// Command bench measures the service (scripts/bench.sh runs every part
// against servers of its own):
//
//	bench setup    sign up (or log in), create an MCP and ingest keys; print them as shell variables
//	bench ingest   load generator: gzip batches over N connections through the Go client
//	bench direct   baseline: the same rows straight into ClickHouse, in flusher-sized batches
//	bench reads    seed a large history into ClickHouse, time every read endpoint and the raw aggregates
//	bench export   time GET /v1/mcps/{id}/export (rows/s, peak RSS) of the seeded MCP
//	bench delivery drain 10,000 chat deliveries to a local sink, then again beside a destination that hangs
//	bench redaction  the service's CPU per MiB of payload under the worst redaction patterns
//	bench soak     a long paced run printing the service's RSS and its duplicate filter's size over time
//	bench storage  bytes on disk per stored item of events and every rollup (system.parts)
//	bench summary  print the table of every figure recorded with -out, against the goals
//	bench capacity write docs/capacity.md, the sizing model, from a results file
//	bench cpuof    run a command, record ClickHouse's CPU per million of its rows
//	bench probes   1,000 probes at 60 s against local MCP servers: CPU per check, spread of the checks
//	bench releases seed an MCP's releases, time the release comparison, verdict and list
//
// Every measuring subcommand appends its figures as JSON lines to the file
// named by -out, which summary reads.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.Exit(1)
	}
}

var commands = map[string]func(ctx context.Context, args []string, out io.Writer) error{
	"setup":     runSetup,
	"ingest":    runIngest,
	"direct":    runDirect,
	"reads":     runReads,
	"export":    runExport,
	"summary":   runSummary,
	"hostile":   runHostile,
	"ready":     runReady,
	"delivery":  runDelivery,
	"redaction": runRedaction,
	"storage":   runStorage,
	"capacity":  runCapacity,
	"soak":      runSoak,
	"cpuof":     runCPUOf,
	"releases":  runReleases,
	"probes":    runProbes,
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || commands[args[0]] == nil {
		return fmt.Errorf("usage: bench setup|ingest|direct|reads|export|hostile|ready|delivery|redaction|storage|soak|summary|capacity|cpuof|releases|probes [flags] (bench CMD -h for the flags)")
	}
	return commands[args[0]](ctx, args[1:], out)
}

// figure is one measured value, a line of the results file.
type figure struct {
	Section string  `json:"section"` // ingest, direct, reads, alerting
	Name    string  `json:"name"`    // what was measured, e.g. "full load" or "overview 365d"
	Metric  string  `json:"metric"`  // e.g. items_per_s, p50_ms
	Value   float64 `json:"value"`
}

// meanOf returns the mean of every value recorded for a figure: a figure
// recorded once is that value; the ingest runs and the direct insert
// record one per round when they alternate with a baseline build.
func meanOf(figs []figure, section, name, metric string) (float64, bool) {
	sum, n := 0.0, 0
	for _, f := range figs {
		if f.Section == section && f.Name == name && f.Metric == metric {
			sum += f.Value
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// recorder appends figures to the results file (if any).
type recorder struct{ path string }

func (r recorder) record(figs ...figure) error {
	if r.path == "" {
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, fg := range figs {
		if err := enc.Encode(fg); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// percentile returns the p-th percentile (0..100) of ds by the nearest-rank
// method; ds is sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rank := int(p/100*float64(len(ds)) + 0.999999)
	return ds[min(max(rank, 1), len(ds))-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// progress prints a line at most every interval.
type progress struct {
	out      io.Writer
	interval time.Duration
	last     time.Time
}

func (p *progress) printf(force bool, format string, args ...any) {
	if !force && time.Since(p.last) < p.interval {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.out, format, args...)
}
