package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

// runIngest is the load generator: conns workers, each generating batches
// of realistic items and posting them with client.Send (gzip), for a
// duration or an item count, optionally paced to a target rate.
func runIngest(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	keys := fs.String("keys", "", "ingest keys, comma-separated (workers use them in turn)")
	conns := fs.Int("conns", 8, "concurrent connections (one worker each)")
	duration := fs.Duration("duration", 30*time.Second, "how long to measure")
	warmup := fs.Duration("warmup", 0, "send this long before measuring (connections, caches, the flusher's first batches)")
	total := fs.Int64("items", 0, "stop after this many items (0: run for -duration)")
	batch := fs.Int("batch", 500, "items per request")
	target := fs.Float64("rate", 0, "target items/s (0: as fast as the service answers)")
	half := fs.Bool("half", false, "target half the items/s of the last 'full load' figure in -out")
	pid := fs.Int("pid", 0, "the service's process id, to report its peak RSS")
	chPIDFile := fs.String("chpid", "", "ClickHouse's pid file, to report its CPU seconds per million items")
	label := fs.String("label", "full load", "name of this run in the results")
	chAddr := fs.String("clickhouse", "", "ClickHouse address: wait until every accepted item is in the events table")
	chDB := fs.String("database", "telemetry", "the service's ClickHouse database")
	mcpID := fs.String("mcp", "", "the MCP the keys belong to (with -clickhouse)")
	outPath := fs.String("out", "", "append the figures to this results file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keys == "" {
		return errors.New("-keys is required")
	}
	if *half {
		full, err := lastFigure(*outPath, "ingest", "full load", "items_per_s")
		if err != nil {
			return fmt.Errorf("-half: %w", err)
		}
		*target = full / 2
	}

	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true, IdleConnTimeout: time.Minute,
	}}
	var clients []*client.Client
	for _, k := range strings.Split(*keys, ",") {
		c, err := client.New(client.Options{Endpoint: *endpoint, Key: strings.TrimSpace(k), HTTPClient: hc, MaxRetries: 3})
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		clients = append(clients, c)
	}

	var counter *eventCounter
	var before uint64
	if *chAddr != "" && *mcpID != "" {
		var err error
		if counter, err = openEventCounter(ctx, *chAddr, *chDB, *mcpID); err != nil {
			return err
		}
		defer counter.close()
		// Start from a quiet server: merges left by a previous run (of
		// this build or of the baseline, in its own database) would slow
		// this one down.
		if err := waitForMerges(ctx, counter.conn, "", 2*time.Minute, &progress{out: out, interval: 10 * time.Second}); err != nil {
			return err
		}
		if before, err = counter.count(ctx); err != nil {
			return err
		}
	}

	mode := "as fast as the service answers"
	var limiter *rate.Limiter
	if *target > 0 {
		mode = fmt.Sprintf("paced to %.0f items/s", *target)
		limiter = rate.NewLimiter(rate.Limit(*target/float64(*batch)), 1)
	}
	fmt.Fprintf(out, "ingest [%s]: %d connections, gzip batches of %d, %s, for %v after %v of warm-up\n", *label, *conns, *batch, mode, *duration, *warmup)

	runCtx, cancel := context.WithTimeout(ctx, *warmup+*duration)
	defer cancel()
	rss := startRSSSampler(runCtx, *pid)
	var (
		reserved, accepted, measured, dropped, failed atomic.Int64
		mu                                            sync.Mutex
		latencies                                     []time.Duration
		firstErr                                      error
		wg                                            sync.WaitGroup
	)
	cpu := startCPU(*pid, *chPIDFile)
	start := time.Now()
	measureFrom := start.Add(*warmup)
	prefix := "b" + strconv.FormatInt(start.Unix(), 36)
	for w := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newGenerator(uint64(w+1), fmt.Sprintf("%s-w%d-", prefix, w))
			c := clients[w%len(clients)]
			items := make([]analytics.Item, 0, *batch)
			var lat []time.Duration
			defer func() {
				mu.Lock()
				latencies = append(latencies, lat...)
				mu.Unlock()
			}()
			for runCtx.Err() == nil {
				n := *batch
				if *total > 0 {
					if r := reserved.Add(int64(n)); r > *total {
						if n = n - int(r-*total); n <= 0 {
							return
						}
					}
				}
				items = g.batch(items, n, time.Now())
				if limiter != nil && limiter.Wait(runCtx) != nil {
					return
				}
				t0 := time.Now()
				res, err := c.Send(runCtx, items)
				if err != nil {
					if runCtx.Err() != nil {
						return // the run ended mid-request: not a failure of the service
					}
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				if t0.After(measureFrom) {
					lat = append(lat, time.Since(t0))
					measured.Add(int64(res.Accepted))
				}
				accepted.Add(int64(res.Accepted))
				dropped.Add(int64(res.Dropped))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	p := progress{out: out, interval: 5 * time.Second, last: start}
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(time.Second):
			el := time.Since(start).Seconds()
			p.printf(false, "  %5.1f s: %d items accepted, %.0f items/s\n", el, accepted.Load(), float64(accepted.Load())/el)
		}
	}
	elapsed := time.Since(start)
	window := time.Since(measureFrom)
	cancel()
	peakRSS := rss.wait()

	acc := accepted.Load()
	itemsPerS := float64(measured.Load()) / window.Seconds()
	p50, p99 := percentile(latencies, 50), percentile(latencies, 99)
	fmt.Fprintf(out, "  accepted %d items (%d dropped, %d failed requests) in %.1f s; measured %d in %.1f s: %.0f items/s\n",
		acc, dropped.Load(), failed.Load(), elapsed.Seconds(), measured.Load(), window.Seconds(), itemsPerS)
	fmt.Fprintf(out, "  request latency over %d requests: p50 %.1f ms, p99 %.1f ms\n", len(latencies), ms(p50), ms(p99))
	if firstErr != nil {
		fmt.Fprintf(out, "  first error: %v\n", firstErr)
	}
	figs := []figure{
		{"ingest", *label, "items_per_s", itemsPerS},
		{"ingest", *label, "p50_ms", ms(p50)},
		{"ingest", *label, "p99_ms", ms(p99)},
		{"ingest", *label, "failed_requests", float64(failed.Load())},
	}
	if *pid > 0 {
		hwm, _ := procStatusKiB(*pid, "VmHWM")
		fmt.Fprintf(out, "  service RSS: peak sampled during the run %.0f MiB, VmHWM since start %.0f MiB\n", peakRSS/1024, hwm/1024)
		figs = append(figs, figure{"ingest", *label, "rss_mib", peakRSS / 1024}, figure{"ingest", *label, "vmhwm_mib", hwm / 1024})
	}
	if counter != nil {
		drainStart := time.Now()
		want := before + uint64(acc)
		for {
			n, err := counter.count(ctx)
			if err != nil {
				return err
			}
			if n >= want {
				break
			}
			if time.Since(drainStart) > 5*time.Minute {
				return fmt.Errorf("after 5 minutes ClickHouse holds %d of the %d accepted items", n-before, acc)
			}
			time.Sleep(100 * time.Millisecond)
		}
		drain := time.Since(drainStart)
		e2e := float64(acc) / (elapsed + drain).Seconds()
		fmt.Fprintf(out, "  every accepted item was in ClickHouse %.1f s after the run: %.0f items/s end to end\n", drain.Seconds(), e2e)
		figs = append(figs, figure{"ingest", *label, "drain_s", drain.Seconds()}, figure{"ingest", *label, "end_to_end_items_per_s", e2e})
	}
	// CPU from the start of the warm-up until every item was stored (or
	// the run's end without -clickhouse): all the work the items cost.
	figs = append(figs, cpu.figures(out, *label, acc)...)
	return recorder{*outPath}.record(figs...)
}

// lastFigure returns the last value recorded in the results file for
// section, name and metric.
func lastFigure(path, section, name, metric string) (float64, error) {
	figs, err := readFigures(path)
	if err != nil {
		return 0, err
	}
	for i := len(figs) - 1; i >= 0; i-- {
		f := figs[i]
		if f.Section == section && f.Name == name && f.Metric == metric {
			return f.Value, nil
		}
	}
	return 0, fmt.Errorf("no %s %q %s figure in %s", section, name, metric, path)
}

func readFigures(path string) ([]figure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var figs []figure
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var fg figure
		if err := json.Unmarshal(sc.Bytes(), &fg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		figs = append(figs, fg)
	}
	return figs, sc.Err()
}

// rssSampler records the highest VmRSS of a process.
type rssSampler struct {
	peak atomic.Int64 // KiB
	done chan struct{}
}

// startRSSSampler samples the process's VmRSS every 100 ms until ctx ends;
// pid 0 samples nothing.
func startRSSSampler(ctx context.Context, pid int) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	if pid == 0 {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := procStatusKiB(pid, "VmRSS"); err == nil && int64(v) > s.peak.Load() {
				s.peak.Store(int64(v))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// wait returns the peak in KiB once sampling stopped.
func (s *rssSampler) wait() float64 {
	<-s.done
	return float64(s.peak.Load())
}

// procStatusKiB reads one "Field:   1234 kB" line of /proc/PID/status.
func procStatusKiB(pid int, field string) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// cpuMeter measures the CPU seconds the service and ClickHouse use over a
// run, from /proc.
type cpuMeter struct {
	pids   map[string]int // "service", "clickhouse"
	before map[string]float64
}

// startCPU starts measuring the service's pid (0: none) and the process of
// ClickHouse's pid file ("": none).
func startCPU(pid int, chPIDFile string) *cpuMeter {
	m := &cpuMeter{pids: map[string]int{}, before: map[string]float64{}}
	if pid > 0 {
		m.pids["service"] = pid
	}
	if chPIDFile != "" {
		if p, err := readPID(chPIDFile); err == nil {
			m.pids["clickhouse"] = p
		}
	}
	for who, p := range m.pids {
		if s, err := procCPUSeconds(p); err == nil {
			m.before[who] = s
		}
	}
	return m
}

// figures reports each process's CPU seconds per million of the items.
func (m *cpuMeter) figures(out io.Writer, label string, items int64) []figure {
	var figs []figure
	for _, who := range []string{"service", "clickhouse"} {
		before, ok := m.before[who]
		if !ok || items <= 0 {
			continue
		}
		after, err := procCPUSeconds(m.pids[who])
		if err != nil {
			continue
		}
		perM := (after - before) / float64(items) * 1e6
		fmt.Fprintf(out, "  %s CPU: %.1f s for %d items, %.1f CPU s per million items\n", who, after-before, items, perM)
		figs = append(figs, figure{"ingest", label, who + "_cpu_s_per_m_items", perM})
	}
	return figs
}
