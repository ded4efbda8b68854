package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// runProbes measures the prober (docs/probes.md) at scale: it starts MCP
// servers of its own on loopback (probeTargets), signs up as many accounts
// as probes.max_per_account needs through the API, measures the service's
// idle CPU, creates the probes through the API, lets the service's
// scheduler run them for a warm-up of one interval, then measures for
// -minutes:
// the CPU per check of the service, ClickHouse, PostgreSQL and the test
// servers (all from /proc), the checks done against those expected, how
// evenly they fall over each second and over the interval, the time
// between consecutive checks of a probe and the checks' latency, as the
// service stored them (probe_results).
func runProbes(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench probes", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address (probes.allow_private on)")
	pid := fs.Int("pid", 0, "the service's process id, for its CPU time")
	chPIDFile := fs.String("chpid", "", "ClickHouse's pid file (its CPU time; optional)")
	pgPIDFile := fs.String("pgpid", "", "PostgreSQL's postmaster pid file (its and its backends' CPU time; optional)")
	chAddr := fs.String("clickhouse", "127.0.0.1:9000", "ClickHouse address, to read the results")
	database := fs.String("database", "telemetry", "the service's ClickHouse database")
	n := fs.Int("n", 1000, "probes")
	perAccount := fs.Int("per-account", 20, "probes per account (the service's probes.max_per_account)")
	interval := fs.Int("interval", 60, "probes' interval_seconds")
	minutes := fs.Float64("minutes", 3, "minutes measured, after a warm-up of one interval")
	idle := fs.Duration("idle", 30*time.Second, "the service's idle CPU is measured this long before the probes exist")
	host := fs.String("host", "127.0.0.1", "address the test servers listen on")
	port := fs.Int("port", 38090, "first of the 6 ports of the test servers (the last one is left closed)")
	outPath := fs.String("out", "", "append the figures to this results file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pid == 0 || *n < 1 || *perAccount < 1 || *interval < 30 || *minutes <= 0 {
		return errors.New("-pid is required; -n, -per-account >= 1, -interval >= 30, -minutes > 0")
	}
	every := time.Duration(*interval) * time.Second
	window := time.Duration(*minutes * float64(time.Minute))

	targets, err := startProbeTargets(*host, *port)
	if err != nil {
		return err
	}
	defer targets.close()
	api := &apiClient{base: strings.TrimRight(*endpoint, "/"), hc: &http.Client{Timeout: 30 * time.Second}}
	accounts, err := probeAccounts(ctx, api, (*n+*perAccount-1) / *perAccount)
	if err != nil {
		return err
	}
	cpu := cpuMeters{service: *pid, chPIDFile: *chPIDFile, pgPIDFile: *pgPIDFile}
	fmt.Fprintf(out, "  %d accounts signed up\n", len(accounts))
	idleRate, err := idleCPU(ctx, *chAddr, cpu, *idle, out)
	if err != nil {
		return err
	}

	created := time.Now()
	probes, err := createProbes(ctx, accounts, *n, *perAccount, *interval, targets.urls)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  %d probes at %d s created through the API in %.1f s (%s)\n", len(probes), *interval, time.Since(created).Seconds(), probeMixText())
	// Measured from one interval after the probes' first checks (all
	// done within the first seconds: at most probes.concurrency are
	// claimed a second).
	from := time.Now().Add(every + 10*time.Second)
	fmt.Fprintf(out, "  warm-up of %s, then measuring for %s (until %s UTC) ...\n", time.Until(from).Round(time.Second), window, from.Add(window).UTC().Format("15:04:05"))
	if err := sleepCtx(ctx, time.Until(from)); err != nil {
		return err
	}
	c0 := cpu.read()
	if err := sleepCtx(ctx, window); err != nil {
		return err
	}
	c1 := cpu.read()
	to := from.Add(window)
	// Checks still running at the end (a hanging server holds one for its
	// timeout) and the prober's buffer (2 s) are waited for.
	if err := sleepCtx(ctx, 15*time.Second); err != nil {
		return err
	}
	checks, err := readProbeChecks(ctx, *chAddr, *database, created.Add(-time.Minute), probes)
	if err != nil {
		return err
	}
	r := probeReport{probes: len(probes), every: every, created: created, from: from, to: to, checks: checks,
		idleRate: idleRate, cpu: c1.minus(c0), requests: targets.requests()}
	figs := r.print(out)
	return recorder{*outPath}.record(figs...)
}

// idleCPU is the CPU s per s of each process over d before the probes
// exist, once ClickHouse's merges have settled: earlier parts' merges
// (the reads' history) would otherwise count as the probes' cost.
func idleCPU(ctx context.Context, chAddr string, cpu cpuMeters, d time.Duration, out io.Writer) (cpuSample, error) {
	conn, err := openCH(ctx, chAddr)
	if err != nil {
		return cpuSample{}, err
	}
	err = waitForMerges(ctx, conn, "", 5*time.Minute, &progress{out: out, interval: 10 * time.Second, last: time.Now()})
	conn.Close()
	if err != nil {
		return cpuSample{}, err
	}
	fmt.Fprintf(out, "  idle CPU over %s ...\n", d)
	c0 := cpu.read()
	if err := sleepCtx(ctx, d); err != nil {
		return cpuSample{}, err
	}
	return cpu.read().minus(c0).scale(1 / d.Seconds()), nil
}

// probeAccount is an account of the benchmark with one MCP.
type probeAccount struct {
	api *apiClient
	mcp string
}

// probeAccounts signs up n accounts, each with one MCP, a few at a time
// (password hashing queues; a busy answer is retried).
func probeAccounts(ctx context.Context, base *apiClient, n int) ([]probeAccount, error) {
	accounts := make([]probeAccount, n)
	stamp := time.Now().UnixNano()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := range accounts {
		g.Go(func() error {
			api := &apiClient{base: base.base, hc: base.hc}
			var auth struct {
				Token string `json:"token"`
			}
			body := map[string]string{"email": fmt.Sprintf("probes-%d-%d@example.com", stamp, i), "password": "bench-password-1", "name": "Probes"}
			if err := retryBusy(gctx, func() (int, error) { return api.do(gctx, "POST", "/v1/auth/signup", body, &auth, 201) }); err != nil {
				return err
			}
			api.token = auth.Token
			var m struct {
				ID string `json:"id"`
			}
			if _, err := api.do(gctx, "POST", "/v1/mcps", map[string]string{"name": fmt.Sprintf("probed-%d", i)}, &m, 201); err != nil {
				return err
			}
			accounts[i] = probeAccount{api: api, mcp: m.ID}
			return nil
		})
	}
	return accounts, g.Wait()
}

// retryBusy retries a call answered 503 or 429 (up to a minute).
func retryBusy(ctx context.Context, call func() (int, error)) error {
	for range 60 {
		status, err := call()
		if err == nil || (status != 503 && status != 429) {
			return err
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	return errors.New("still busy after a minute")
}

// createProbes creates n probes, perAccount in each account, every one on
// a target of probeMix by its index; it returns the probes' ids.
func createProbes(ctx context.Context, accounts []probeAccount, n, perAccount, interval int, urls map[string]string) (map[string]bool, error) {
	var mu sync.Mutex
	ids := map[string]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for a, acc := range accounts {
		g.Go(func() error {
			for i := a * perAccount; i < min((a+1)*perAccount, n); i++ {
				var p struct {
					ID string `json:"id"`
				}
				body := map[string]any{"url": urls[probeKind(i)], "interval_seconds": interval}
				if _, err := acc.api.do(gctx, "POST", "/v1/mcps/"+acc.mcp+"/probes", body, &p, 201); err != nil {
					return err
				}
				mu.Lock()
				ids[p.ID] = true
				mu.Unlock()
			}
			return nil
		})
	}
	return ids, g.Wait()
}

// readProbeChecks reads the results of the given probes stored since
// since.
func readProbeChecks(ctx context.Context, addr, database string, since time.Time, probes map[string]bool) ([]probeCheck, error) {
	conn, err := openCH(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT probe_id, toUInt32(toUnixTimestamp(at)), at_ms, is_up, latency_ms, error_kind
		FROM %s.probe_results WHERE at >= toDateTime(%d)`, database, since.Unix()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []probeCheck
	for rows.Next() {
		var (
			c    probeCheck
			sec  uint32
			ms   uint16
			up   uint8
			lat  float64
			kind string
		)
		if err := rows.Scan(&c.probe, &sec, &ms, &up, &lat, &kind); err != nil {
			return nil, err
		}
		if !probes[c.probe] {
			continue
		}
		c.at = time.Unix(int64(sec), int64(ms)*int64(time.Millisecond))
		c.up, c.latency, c.kind = up == 1, time.Duration(lat*float64(time.Millisecond)), kind
		out = append(out, c)
	}
	return out, rows.Err()
}

// probeReport is what one run measured.
type probeReport struct {
	probes   int
	every    time.Duration
	created  time.Time // when their creation began
	from, to time.Time
	checks   []probeCheck // since the probes were created
	idleRate cpuSample    // CPU s per s before the probes
	cpu      cpuSample    // CPU s used over [from, to)
	requests map[string]int64
}

func (r probeReport) print(out io.Writer) []figure {
	var in []probeCheck
	kinds := map[string]int{}
	var lat, upLat []time.Duration
	for _, c := range r.checks {
		if c.at.Before(r.from) || !c.at.Before(r.to) {
			continue
		}
		in = append(in, c)
		kinds[c.kind]++
		lat = append(lat, c.latency)
		if c.up {
			upLat = append(upLat, c.latency)
		}
	}
	secs := r.to.Sub(r.from).Seconds()
	expected := float64(r.probes) * secs / r.every.Seconds()
	done := float64(len(in))
	per := func(cpuS float64) float64 { return cpuS / max(done, 1) * 1000 } // ms per check
	net := r.cpu.minus(r.idleRate.scale(secs))
	fmt.Fprintf(out, "  checks: %d of %.0f expected (%.1f%%); %s\n", len(in), expected, 100*done/expected, kindText(kinds))
	fmt.Fprintf(out, "  idle, %% of a core: service %.1f, ClickHouse %.1f, PostgreSQL %.1f (subtracted below)\n",
		100*r.idleRate.service, 100*r.idleRate.clickhouse, 100*r.idleRate.postgres)
	fmt.Fprintf(out, "  CPU per check: service %.2f ms (%.2f ms gross), ClickHouse %.2f ms (%.2f), PostgreSQL %.2f ms (%.2f), test servers %.2f ms\n",
		per(net.service), per(r.cpu.service), per(net.clickhouse), per(r.cpu.clickhouse), per(net.postgres), per(r.cpu.postgres), per(net.self))
	sec := statsOfBins(perSecond(in, r.from, int(secs)))
	ph := statsOfBins(phases(in, r.from, r.to, r.every))
	fmt.Fprintf(out, "  checks per second: mean %.1f, min %.0f, p99 %.0f, max %.0f (cv %.2f); folded on the interval: busiest second %.0f, quietest %.0f, mean %.1f\n",
		sec.mean, sec.min, sec.p99, sec.max, sec.cv, ph.max, ph.min, ph.mean)
	iv := checkIntervals(r.checks, r.from, r.to)
	fmt.Fprintf(out, "  time between checks of a probe: min %.1f s, p50 %.1f s, p99 %.1f s, max %.1f s (%d)\n",
		iv.shortest.Seconds(), iv.p50.Seconds(), iv.p99.Seconds(), iv.longest.Seconds(), iv.n)
	fmt.Fprintf(out, "  check latency: all p50 %.1f ms, p99 %.1f ms; up p50 %.1f ms, p99 %.1f ms\n",
		ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(percentile(upLat, 50)), ms(percentile(upLat, 99)))
	first := lastFirstCheck(r.checks).Sub(r.created).Seconds()
	fmt.Fprintf(out, "  every probe's first check done %.1f s after their creation began\n", first)
	fmt.Fprintf(out, "  requests served by the test servers: %s\n", requestText(r.requests))
	f := func(metric string, v float64) figure { return figure{"probes", "probes", metric, v} }
	return []figure{
		f("probes", float64(r.probes)), f("interval_s", r.every.Seconds()), f("window_s", secs),
		f("checks", done), f("expected", expected),
		f("service_cpu_ms_per_check", per(net.service)), f("service_gross_cpu_ms_per_check", per(r.cpu.service)),
		f("service_idle_cores", r.idleRate.service), f("clickhouse_cpu_ms_per_check", per(net.clickhouse)),
		f("postgres_cpu_ms_per_check", per(net.postgres)), f("servers_cpu_ms_per_check", per(net.self)),
		f("per_second_mean", sec.mean), f("per_second_min", sec.min), f("per_second_p99", sec.p99),
		f("per_second_max", sec.max), f("per_second_cv", sec.cv), f("phase_max", ph.max), f("phase_min", ph.min), f("phase_mean", ph.mean),
		f("interval_min_s", iv.shortest.Seconds()), f("interval_p50_s", iv.p50.Seconds()),
		f("interval_p99_s", iv.p99.Seconds()), f("interval_max_s", iv.longest.Seconds()),
		f("latency_p50_ms", ms(percentile(lat, 50))), f("latency_p99_ms", ms(percentile(lat, 99))),
		f("up_latency_p50_ms", ms(percentile(upLat, 50))), f("up_latency_p99_ms", ms(percentile(upLat, 99))),
		f("first_checks_s", first),
	}
}

// kindText is "up 2850, down: connect 40, …".
func kindText(kinds map[string]int) string {
	var parts []string
	for k, v := range kinds {
		if k != "" {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("up %d, down: %s", kinds[""], strings.Join(parts, ", "))
}

func requestText(reqs map[string]int64) string {
	var parts []string
	for _, m := range probeMix {
		if v, ok := reqs[m.kind]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", m.kind, v))
		}
	}
	return strings.Join(parts, ", ")
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// probes prints the prober's figures (bench probes) against the goals of
// docs/benchmarks.md.
func (s summary) probes() {
	n, ok := s.get("probes", "probes", "probes")
	if !ok {
		return
	}
	g := func(metric string) float64 { v, _ := s.get("probes", "probes", metric); return v }
	every, window := g("interval_s"), g("window_s")
	fmt.Fprintf(s.out, "probes: %.0f at %.0f s against local MCP servers, %.1f minutes measured\n", n, every, window/60)
	ratio := g("checks") / max(g("expected"), 1)
	s.line("checks done / expected", fmt.Sprintf("%.0f / %.0f (%.1f%%)", g("checks"), g("expected"), 100*ratio), "99-101% (once per interval)", pass(ratio >= 0.99 && ratio <= 1.01))
	s.line("CPU per check: service (idle CPU subtracted)", fmt.Sprintf("%.2f ms", g("service_cpu_ms_per_check")), "", "")
	s.line("  ClickHouse / PostgreSQL / test servers", fmt.Sprintf("%.2f / %.2f / %.2f ms", g("clickhouse_cpu_ms_per_check"), g("postgres_cpu_ms_per_check"), g("servers_cpu_ms_per_check")), "", "")
	mean, top := g("per_second_mean"), g("per_second_max")
	s.line("checks per second: mean / p99 / max", fmt.Sprintf("%.1f / %.0f / %.0f", mean, g("per_second_p99"), top), "max <= 3x mean", pass(top <= 3*mean))
	s.line("  seconds of the interval: quietest / busiest", fmt.Sprintf("%.0f / %.0f (mean %.1f)", g("phase_min"), g("phase_max"), g("phase_mean")), "", "")
	p99 := g("interval_p99_s")
	s.line("time between checks: min / p50 / p99 / max", fmt.Sprintf("%.1f / %.1f / %.1f / %.1f s", g("interval_min_s"), g("interval_p50_s"), p99, g("interval_max_s")),
		fmt.Sprintf("p99 within %.0f ± 1 s", every), pass(math.Abs(p99-every) <= 1 && math.Abs(g("interval_p50_s")-every) <= 1))
	if first, ok := s.get("probes", "probes", "first_checks_s"); ok {
		s.line("every first check done", fmt.Sprintf("%.1f s after creation began", first), "", "")
	}
	s.line("check latency p50 / p99 (up checks)", fmt.Sprintf("%.1f / %.1f ms", g("up_latency_p50_ms"), g("up_latency_p99_ms")), "", "")
}
