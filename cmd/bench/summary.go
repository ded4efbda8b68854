package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runSummary prints every recorded figure as one table, with the goals of
// docs/benchmarks.md next to them.
func runSummary(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench summary", flag.ContinueOnError)
	in := fs.String("in", "", "results file written with -out")
	gobench := fs.String("gobench", "", "output of the alerting Go benchmarks (go test -bench)")
	gobase := fs.String("gobench-baseline", "", "the same benchmarks of a baseline build, printed beside them with the ratio")
	baseline := fs.String("baseline", "", "results file of the baseline build's ingest and direct insert, run beside this build's")
	baselineName := fs.String("baseline-name", "baseline", "the baseline build's name (its git revision)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	figs, err := readFigures(*in)
	if err != nil {
		return err
	}
	s := summary{figs: figs, out: out}

	fmt.Fprintln(out, "\n==================== summary ====================")
	fmt.Fprintln(out, "ingest")
	full, haveFull := s.ingest()

	if *baseline != "" {
		base, err := readFigures(*baseline)
		if err != nil {
			return err
		}
		printIngestGoals(out, figs, base, *baselineName)
		printClickHouseGoals(out, figs, base, *baselineName)
	} else {
		printClickHouseGoals(out, figs, nil, "")
	}

	s.costs()
	s.edges(full, haveFull)
	s.hostile()
	s.redaction()
	s.reads()
	s.export()
	s.delivery()
	s.probes()
	if *gobench != "" {
		return s.goBench(*gobench, *gobase)
	}
	return nil
}

// summary prints the figures of one results file as the summary's lines.
type summary struct {
	figs []figure
	out  io.Writer
}

// get is the recorded value of a figure (the mean of its rounds).
func (s summary) get(section, name, metric string) (float64, bool) {
	return meanOf(s.figs, section, name, metric)
}

// line prints one row of the summary: what, its value, the goal and the verdict.
func (s summary) line(what, value, goal, verdict string) {
	fmt.Fprintln(s.out, strings.TrimRight(fmt.Sprintf("  %-44s %-22s %-26s %s", what, value, goal, verdict), " "))
}

// ingest prints the ingest figures and returns the full-load rate.
func (s summary) ingest() (full float64, haveFull bool) {
	full, haveFull = s.get("ingest", "full load", "items_per_s")
	direct, haveDirect := s.get("direct", "direct insert", "rows_per_s")
	if haveFull {
		p50, _ := s.get("ingest", "full load", "p50_ms")
		p99, _ := s.get("ingest", "full load", "p99_ms")
		s.line("HTTP ingest, full load", fmt.Sprintf("%.0f items/s", full), "", "")
		s.line("  request latency p50 / p99", fmt.Sprintf("%.1f / %.1f ms", p50, p99), "", "")
		if e2e, ok := s.get("ingest", "full load", "end_to_end_items_per_s"); ok {
			drain, _ := s.get("ingest", "full load", "drain_s")
			s.line("  end to end (until all in ClickHouse)", fmt.Sprintf("%.0f items/s", e2e), fmt.Sprintf("(drained in %.1f s)", drain), "")
		}
	}
	if haveDirect {
		s.line("direct insert into ClickHouse", fmt.Sprintf("%.0f rows/s", direct), "", "")
	}
	if haveFull && haveDirect {
		r := full / direct
		s.line("HTTP / direct", fmt.Sprintf("%.2f", r), ">= 0.25", pass(r >= 0.25))
	}
	if p99, ok := s.get("ingest", "half load", "p99_ms"); ok {
		rate, _ := s.get("ingest", "half load", "items_per_s")
		s.line(fmt.Sprintf("p99 at half load (%.0f items/s)", rate), fmt.Sprintf("%.1f ms", p99), "< 50 ms", pass(p99 < 50))
	}
	peak := 0.0
	for _, f := range s.figs {
		if f.Section == "ingest" && (f.Metric == "rss_mib" || f.Metric == "vmhwm_mib") {
			peak = max(peak, f.Value)
		}
	}
	if peak > 0 {
		s.line("service peak RSS (VmHWM)", fmt.Sprintf("%.0f MiB", peak), "< 512 MiB", pass(peak < 512))
	}

	return full, haveFull
}

// costs prints the CPU and disk cost per item.
func (s summary) costs() {
	if c, ok := s.get("ingest", "full load", "service_cpu_s_per_m_items"); ok {
		ch, _ := s.get("ingest", "full load", "clickhouse_cpu_s_per_m_items")
		s.line("CPU per million items, service / ClickHouse", fmt.Sprintf("%.1f / %.1f s", c, ch), "(full load, until stored)", "")
	}
	if b, ok := s.get("storage", "all tables", "bytes_per_item"); ok {
		opt, _ := s.get("storage", "all tables", "bytes_per_item_optimized")
		ev, _ := s.get("storage", "events", "bytes_per_item")
		evOpt, _ := s.get("storage", "events", "bytes_per_item_optimized")
		s.line("bytes on disk per item, all tables", fmt.Sprintf("%.1f B (%.1f B merged)", b, opt), "(as ingested; after OPTIMIZE)", "")
		s.line("  of which events", fmt.Sprintf("%.1f B (%.1f B merged)", ev, evOpt), "", "")
	}
}

// edges prints the shared-dedup, soak and restart figures; full is the
// ingest part's full-load rate, used when the edges part has no in-memory
// dedup run of its own.
func (s summary) edges(full float64, haveFull bool) {
	if shared, ok := s.get("ingest", "full load, shared dedup", "items_per_s"); ok {
		fmt.Fprintln(s.out, "exactly once across instances (ingest.shared_dedup: ids in PostgreSQL)")
		s.line("HTTP ingest, full load, shared dedup", fmt.Sprintf("%.0f items/s", shared), "", "")
		// Side by side in the edges part when it ran, else the ingest part's.
		mem, ok := s.get("ingest", "full load, in-memory dedup", "items_per_s")
		if !ok {
			mem, ok = full, haveFull
		}
		if ok && mem > 0 {
			s.line("  shared / in-memory dedup (same run)", fmt.Sprintf("%.2fx", shared/mem), ">= 0.8x", pass(shared/mem >= 0.8))
		}
	}
	if mins, ok := s.get("soak", "soak", "minutes"); ok {
		rate, _ := s.get("soak", "soak", "items_per_s")
		peak, _ := s.get("soak", "soak", "rss_peak_mib")
		trend, _ := s.get("soak", "soak", "rss_trend_mib_per_min")
		filter, _ := s.get("soak", "soak", "filter_mib")
		items, _ := s.get("soak", "soak", "items")
		outage, _ := s.get("soak", "soak", "outage_minutes")
		backlog, _ := s.get("soak", "soak", "backlog_peak_records")
		exact, _ := s.get("soak", "soak", "exact_ids_peak")
		fmt.Fprintf(s.out, "soak: %.0f minutes at half capacity (%.0f items/s, %.0f items), ClickHouse stopped %.0f minutes in the middle\n", mins, rate, items, outage)
		s.line("goal 4: service peak RSS", fmt.Sprintf("%.0f MiB", peak), fmt.Sprintf("< %d MiB", soakRSSGoalMiB), pass(peak < soakRSSGoalMiB))
		s.line("  peak log backlog / peak exact ids", fmt.Sprintf("%.0f / %.0f", backlog, exact), "", "")
		s.line("  RSS trend over the second half", fmt.Sprintf("%+.1f MiB/min", trend), "", "")
		s.line("  duplicate filter (exact table + Bloom ring)", fmt.Sprintf("%.1f MiB", filter), "(bounded by configuration)", "")
	}
	if secs, ok := s.get("edges", "restart to ready", "s"); ok {
		ids, _ := s.get("edges", "restart to ready", "ids_24h")
		s.line("restart to ready (first 202)", fmt.Sprintf("%.2f s", secs), "< 10 s", pass(secs < 10))
		s.line("  item ids of the last 24 h in ClickHouse", fmt.Sprintf("%.0f", ids), "", "")
	}
}

// hostile prints the figures of the hostile load.
func (s summary) hostile() {
	if ratio, ok := s.get("hostile", "p99 ratio", "x"); ok {
		fmt.Fprintln(s.out, "hostile load (20 gzip bombs + 20 OTLP empty-span posters beside normal ingest)")
		alone, _ := s.get("hostile", "normal key alone", "p99_ms")
		loaded, _ := s.get("hostile", "normal key under attack", "p99_ms")
		bad, _ := s.get("hostile", "5xx other than 503", "count")
		rss, _ := s.get("hostile", "service peak rss", "rss_mib")
		s.line("normal key p99, alone / under attack", fmt.Sprintf("%.1f / %.1f ms", alone, loaded), "", "")
		s.line("  ratio", fmt.Sprintf("%.2fx", ratio), "<= 2x", pass(ratio <= 2))
		s.line("  5xx other than 503", fmt.Sprintf("%.0f", bad), "0", pass(bad == 0))
		if rss > 0 {
			s.line("  service peak RSS under attack", fmt.Sprintf("%.0f MiB", rss), "< 512 MiB", pass(rss < 512))
		}
	}
}

// redaction prints the redaction cost.
func (s summary) redaction() {
	if worst, ok := s.get("redaction", "worst case", "cpu_ms_per_mib"); ok {
		fmt.Fprintln(s.out, "redaction (1 MiB payloads shaped against the worst patterns validation accepts and the built-in ones)")
		s.line("worst service CPU per MiB of payload", fmt.Sprintf("%.0f ms", worst), "< 50 ms", pass(worst < 50))
	}
}

// reads prints the read latencies of the dashboard and analyst endpoints.
func (s summary) reads() {
	if n, ok := s.get("reads", "history", "mcp_events"); ok {
		fmt.Fprintf(s.out, "reads of an MCP holding %.0f events (raw: the same figures aggregated from the events table)\n", n)
		if n < 49_000_000 {
			fmt.Fprintln(s.out, "  (the read goals are set for the full run's 50-million-event MCP; this run is smaller)")
		}
		fmt.Fprintf(s.out, "  %-18s %10s %10s %10s %9s   %s\n", "", "HTTP p50", "HTTP p95", "raw p50", "raw/HTTP", "goal")
		for _, days := range []int{7, 90, 365} {
			for _, ep := range readEndpoints {
				name := fmt.Sprintf("%s %dd", ep, days)
				h50, ok := s.get("reads", name, "http_p50_ms")
				if !ok {
					continue
				}
				h95, _ := s.get("reads", name, "http_p95_ms")
				r50, _ := s.get("reads", name, "raw_p50_ms")
				ratio, _ := s.get("reads", name, "ratio")
				goal, verdict := "", ""
				switch {
				case days == 365 && (ep == "overview" || ep == "tools"):
					goal, verdict = "p50 < 150 ms, >= 10x raw", pass(h50 < 150 && ratio >= 10)
				case ep == "sessions":
					goal, verdict = "p50 < 100 ms", pass(h50 < 100)
				}
				fmt.Fprintln(s.out, strings.TrimRight(fmt.Sprintf("  %-18s %7.1f ms %7.1f ms %7.0f ms %8.1fx   %-26s %s",
					name, h50, h95, r50, ratio, goal, verdict), " "))
			}
		}
		s.analystReads()
	}
}

// analystReads prints the analyst reads and their goals (docs/benchmarks.md).
func (s summary) analystReads() {
	goals := map[string]float64{"breakdown client_name 365d": 200, "session timeline": 50, "hourly overview 14d": 50}
	for _, name := range analystNames {
		h50, ok := s.get("reads", name, "http_p50_ms")
		if !ok {
			continue
		}
		h95, _ := s.get("reads", name, "http_p95_ms")
		r50, _ := s.get("reads", name, "raw_p50_ms")
		ratio, _ := s.get("reads", name, "ratio")
		fmt.Fprintln(s.out, strings.TrimRight(fmt.Sprintf("  %-18s %7.1f ms %7.1f ms %7.0f ms %8.1fx   %-26s %s",
			name, h50, h95, r50, ratio, fmt.Sprintf("p50 < %.0f ms", goals[name]), pass(h50 < goals[name])), " "))
	}
}

// export prints the export rates.
func (s summary) export() {
	if n, ok := s.get("export", "export csv", "rows"); ok {
		fmt.Fprintf(s.out, "export of an MCP's %.0f items streamed to a client on the same machine\n", n)
		for _, f := range []string{"ndjson", "csv"} {
			rate, ok := s.get("export", "export "+f, "rows_per_s")
			if !ok {
				continue
			}
			rss, _ := s.get("export", "export "+f, "rss_mib")
			s.line("export "+f, fmt.Sprintf("%.0f rows/s", rate), ">= 1,000,000 rows/s", pass(rate >= 1_000_000))
			s.line("  service peak RSS during it", fmt.Sprintf("%.0f MiB", rss), "< 512 MiB", pass(rss < 512))
		}
		if rss, ok := s.get("export", "export ndjson, 512 KiB attribute", "rss_mib"); ok {
			s.line("export with a 512 KiB attribute: peak RSS", fmt.Sprintf("%.0f MiB", rss), "< 512 MiB", pass(rss < 512))
		}
	}
}

// delivery prints the outbox's delivery figures.
func (s summary) delivery() {
	if rate, ok := s.get("delivery", "chat deliveries", "deliveries_per_s"); ok {
		fmt.Fprintln(s.out, "delivery: chat deliveries drained by the outbox to a local sink")
		s.line("deliveries drained", fmt.Sprintf("%.0f deliveries/s", rate), "", "")
		p99, _ := s.get("delivery", "chat deliveries", "p99_ms")
		hung, ok := s.get("delivery", "chat deliveries, one destination hanging", "p99_ms")
		if ok {
			s.line("due → sent p99, alone / beside a hanging one", fmt.Sprintf("%.1f s / %.1f s", p99/1000, hung/1000), "not delayed (<= 1.2x)", pass(hung <= 1.2*p99))
		}
	}
}

// goBench prints the Go benchmarks of the file gobench, beside those of
// gobase when given.
func (s summary) goBench(gobench, gobase string) error {
	results, err := parseGoBench(gobench)
	if err != nil {
		return err
	}
	var base []goBenchResult
	if gobase != "" {
		if base, err = parseGoBench(gobase); err != nil {
			return err
		}
	}
	fmt.Fprintln(s.out, "Go benchmarks (time per operation; goals in docs/benchmarks.md)")
	for _, r := range results {
		goal, verdict := "", ""
		switch {
		case strings.HasSuffix(r.name, "EvaluatePass10kRules/steady"):
			goal, verdict = "< 0.3 s quiet (<= 10 s)", pass(r.perOp < 300*time.Millisecond)
		case strings.HasSuffix(r.name, "EvaluatePassSeasonalAndSLOs/rules_and_slos"):
			// 10,000 seasonal rules and 10,000 SLOs in one pass (issue 42).
			goal, verdict = "< 1 s (docs/slos.md)", pass(r.perOp < time.Second)
		case strings.Contains(r.name, "EvaluatePass"):
			goal, verdict = "<= 10 s", pass(r.perOp <= 10*time.Second)
		case strings.Contains(r.name, "FanOut"):
			goal, verdict = "<= 1 s", pass(r.perOp <= time.Second)
		}
		value := r.perOp.Round(time.Microsecond).String()
		if b, ok := benchNamed(base, r.name); ok && b.perOp > 0 {
			value += fmt.Sprintf(" (%.2fx base)", float64(r.perOp)/float64(b.perOp))
		}
		s.line(r.name, value, goal, verdict)
		if g, c, ok := passCPU(r); ok {
			s.line("  CPU per pass: Go / ClickHouse", fmt.Sprintf("%.0f ms / %.0f ms", g, c), "", "")
		}
	}
	s.weekAgoRatios(results, base)
	return nil
}

// weekAgoRatios prints what half the rules on week_ago cost over the
// steady pass: in time, and in CPU (the service's and ClickHouse's,
// which the machine's load moves far less), beside the baseline's.
func (s summary) weekAgoRatios(results, base []goBenchResult) {
	const steadyName, weekAgoName = "BenchmarkEvaluatePass10kRules/steady", "BenchmarkEvaluatePass10kRules/steady_half_week_ago"
	value := func(rs []goBenchResult, name string, cpu bool) float64 {
		r, _ := benchNamed(rs, name) // the zero result if absent: no ratio
		if cpu {
			return r.metrics["go-cpu-ms/op"] + r.metrics["ch-cpu-ms/op"]
		}
		return float64(r.perOp)
	}
	ratio := func(rs []goBenchResult, cpu bool) float64 {
		st, wa := value(rs, steadyName, cpu), value(rs, weekAgoName, cpu)
		if st <= 0 || wa <= 0 {
			return 0
		}
		return wa / st
	}
	for _, cpu := range []bool{false, true} {
		r := ratio(results, cpu)
		if r == 0 {
			continue
		}
		what, value := "rule pass, half week_ago / steady", fmt.Sprintf("%.2fx", r)
		if cpu {
			what = "rule pass CPU, half week_ago / steady"
		}
		if b := ratio(base, cpu); b > 0 {
			value += fmt.Sprintf(" (base %.2fx)", b)
		}
		s.line(what, value, "<= 1.3x", pass(r <= 1.3))
	}
}

// passCPU is the CPU per operation a pass benchmark reports (cpuMeter in
// ./postgres): the service's and the ClickHouse server's, in ms.
func passCPU(r goBenchResult) (goMs, chMs float64, ok bool) {
	goMs, okGo := r.metrics["go-cpu-ms/op"]
	chMs, okCH := r.metrics["ch-cpu-ms/op"]
	return goMs, chMs, okGo && okCH
}

// benchNamed is the result of the benchmark named name in rs (the zero
// result if none).
func benchNamed(rs []goBenchResult, name string) (goBenchResult, bool) {
	for _, r := range rs {
		if r.name == name {
			return r, true
		}
	}
	return goBenchResult{}, false
}

// printIngestGoals prints the ingest goals of docs/benchmarks.md beside the
// baseline build's figures of the same run: the goal, this build's figure,
// the baseline's, their ratio (this / baseline) and the verdict.
func printIngestGoals(out io.Writer, figs, base []figure, baseName string) {
	fmt.Fprintf(out, "ingest goals, beside the baseline build %s (same run, same servers, same load)\n", baseName)
	fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("  %-48s %-16s %-16s %-8s %s", "goal", "this build", "baseline", "ratio", "verdict"), " "))
	row := func(goal, this, baseline string, ratio float64, verdict string) {
		r := "-"
		if ratio > 0 && !math.IsInf(ratio, 0) {
			r = fmt.Sprintf("%.2fx", ratio)
		}
		fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("  %-48s %-16s %-16s %-8s %s", goal, this, baseline, r, verdict), " "))
	}
	type pair struct {
		this, base         float64
		haveThis, haveBase bool
	}
	// Each figure is the mean of its rounds (meanOf): the ingest runs and
	// the direct insert alternate between the builds.
	get := func(section, name, metric string) pair {
		var p pair
		p.this, p.haveThis = meanOf(figs, section, name, metric)
		p.base, p.haveBase = meanOf(base, section, name, metric)
		return p
	}
	show := func(v float64, ok bool, format string) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	ratio := func(p pair) float64 {
		if !p.haveThis || !p.haveBase || p.base == 0 {
			return 0
		}
		return p.this / p.base
	}
	http := get("ingest", "full load", "items_per_s")
	e2e := get("ingest", "full load", "end_to_end_items_per_s")
	direct := get("direct", "direct insert", "rows_per_s")
	half := get("ingest", "half load", "p99_ms")
	row("HTTP ingest, full load (items/s)", show(http.this, http.haveThis, "%.0f"), show(http.base, http.haveBase, "%.0f"), ratio(http), "")
	row("end to end, until all in ClickHouse (items/s)", show(e2e.this, e2e.haveThis, "%.0f"), show(e2e.base, e2e.haveBase, "%.0f"), ratio(e2e), "")
	eOverD := pair{haveThis: e2e.haveThis && direct.haveThis && direct.this > 0, haveBase: e2e.haveBase && direct.haveBase && direct.base > 0}
	if eOverD.haveThis {
		eOverD.this = e2e.this / direct.this
	}
	if eOverD.haveBase {
		eOverD.base = e2e.base / direct.base
	}
	row("end to end / direct insert", show(eOverD.this, eOverD.haveThis, "%.2f"), show(eOverD.base, eOverD.haveBase, "%.2f"), ratio(eOverD), "")
	row("direct insert (rows/s)", show(direct.this, direct.haveThis, "%.0f"), show(direct.base, direct.haveBase, "%.0f"), ratio(direct), "")
	// CPU per item from /proc: steadier than rates on a shared machine
	// (less is better).
	cpu := get("direct", "direct insert", "clickhouse_cpu_s_per_m_rows")
	row("  its ClickHouse CPU s per million rows", show(cpu.this, cpu.haveThis, "%.1f"), show(cpu.base, cpu.haveBase, "%.1f"), ratio(cpu), "")
	svc := get("ingest", "full load", "service_cpu_s_per_m_items")
	verdict := ""
	if svc.haveThis {
		verdict = pass(svc.this <= serviceCPUGoal)
	}
	row(fmt.Sprintf("goal 1: service CPU s per M items <= %.1f", serviceCPUGoal), show(svc.this, svc.haveThis, "%.2f"), show(svc.base, svc.haveBase, "%.2f"), ratio(svc), verdict)
	chCPU := get("ingest", "full load", "clickhouse_cpu_s_per_m_items")
	row("  ClickHouse CPU s per M items (/proc)", show(chCPU.this, chCPU.haveThis, "%.2f"), show(chCPU.base, chCPU.haveBase, "%.2f"), ratio(chCPU), "")
	// Goal 5: the service's own p99 (request start to 202, its histogram)
	// within 2x its log's fsync p99, at half load.
	own, sync := get("ingest", "half load", "server_p99_ms"), get("ingest", "half load", "wal_sync_p99_ms")
	over := pair{haveThis: own.haveThis && sync.haveThis && sync.this > 0, haveBase: own.haveBase && sync.haveBase && sync.base > 0}
	if over.haveThis {
		over.this = own.this / sync.this
	}
	if over.haveBase {
		over.base = own.base / sync.base
	}
	verdict = ""
	if over.haveThis {
		verdict = pass(over.this <= ownOverSyncGoal)
	}
	row(fmt.Sprintf("goal 5: half-load p99 / fsync p99 <= %.0fx", ownOverSyncGoal), show(over.this, over.haveThis, "%.2fx"), show(over.base, over.haveBase, "%.2fx"), ratio(over), verdict)
	row("  its service p99 (own histogram)", show(own.this, own.haveThis, "%.1f ms"), show(own.base, own.haveBase, "%.1f ms"), ratio(own), "")
	row("  its log fsync p99", show(sync.this, sync.haveThis, "%.1f ms"), show(sync.base, sync.haveBase, "%.1f ms"), ratio(sync), "")
	row("  its client p99", show(half.this, half.haveThis, "%.1f ms"), show(half.base, half.haveBase, "%.1f ms"), ratio(half), "")
}

// The service's goals of docs/benchmarks.md (issue 40): its CPU per
// million items accepted to stored, and its half-load p99 over its log's
// fsync p99.
const (
	serviceCPUGoal  = 2.5
	ownOverSyncGoal = 2.0
)

type goBenchResult struct {
	name  string
	perOp time.Duration
	// metrics are the line's other figures by unit ("go-cpu-ms/op").
	metrics map[string]float64
}

var (
	benchLine   = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)
	benchMetric = regexp.MustCompile(`\s([\d.]+) (\S+/op)`)
)

// parseGoBench reads the "BenchmarkX-2  N  123 ns/op  4.5 x/op" lines of
// go test -bench output; a benchmark run several times (-count) is the
// median of its runs, figure by figure.
func parseGoBench(path string) ([]goBenchResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []goBenchResult
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		r := goBenchResult{name: m[1], perOp: time.Duration(ns), metrics: map[string]float64{}}
		for _, mm := range benchMetric.FindAllStringSubmatch(sc.Text(), -1) {
			if v, err := strconv.ParseFloat(mm[1], 64); err == nil && mm[2] != "ns/op" {
				r.metrics[mm[2]] = v
			}
		}
		rs = append(rs, r)
	}
	return medianRuns(rs), sc.Err()
}

// medianRuns folds the runs of each benchmark into one result, in the
// order each was first seen: the median time per operation and the
// median of each other figure.
func medianRuns(rs []goBenchResult) []goBenchResult {
	var out []goBenchResult
	runs := map[string][]goBenchResult{}
	for _, r := range rs {
		if runs[r.name] == nil {
			out = append(out, goBenchResult{name: r.name})
		}
		runs[r.name] = append(runs[r.name], r)
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	for i := range out {
		rr := runs[out[i].name]
		var ops []float64
		figures := map[string][]float64{}
		for _, r := range rr {
			ops = append(ops, float64(r.perOp))
			for k, v := range r.metrics {
				figures[k] = append(figures[k], v)
			}
		}
		out[i].perOp = time.Duration(median(ops))
		out[i].metrics = map[string]float64{}
		for k, v := range figures {
			out[i].metrics[k] = median(v)
		}
	}
	return out
}

// pass is the verdict printed next to a goal.
func pass(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}
