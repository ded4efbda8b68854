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
	"net/http/httptrace"
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
	mode, limiter, err := ingestPace(*outPath, *half, *target, *batch)
	if err != nil {
		return err
	}

	clients, err := openClients(*endpoint, *keys, *conns, time.Minute)
	defer closeClients(clients)
	if err != nil {
		return err
	}

	var counter *eventCounter
	var before uint64
	if *chAddr != "" && *mcpID != "" {
		if counter, err = openEventCounter(ctx, *chAddr, *chDB, *mcpID); err != nil {
			return err
		}
		defer counter.close()
		if before, err = quietCount(ctx, counter, out); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "ingest [%s]: %d connections, gzip batches of %d, %s, for %v after %v of warm-up\n", *label, *conns, *batch, mode, *duration, *warmup)

	runCtx, cancel := context.WithTimeout(ctx, *warmup+*duration)
	defer cancel()
	rss := startRSSSampler(runCtx, *pid)
	cpu := startCPU(*pid, *chPIDFile)
	start := time.Now()
	load := &ingestLoad{batch: *batch, total: *total, limiter: limiter, measureFrom: start.Add(*warmup)}
	viewAt := scrapeServerViewAfter(ctx, runCtx, *endpoint, *warmup)
	load.run(runCtx, *conns, clients, out, start)
	elapsed := time.Since(start)
	window := time.Since(load.measureFrom)
	cancel()
	peakRSS := rss.wait()

	acc := load.accepted.Load()
	figs := load.report(out, *label, elapsed, window)
	figs = append(figs, serverViewFigures(out, *label, <-viewAt, scrapeServerView(ctx, *endpoint))...)
	if *pid > 0 {
		figs = append(figs, ingestRSSFigures(out, *pid, *label, peakRSS)...)
	}
	if counter != nil {
		drain, err := waitDrained(ctx, counter, before, acc)
		if err != nil {
			return err
		}
		figs = append(figs, drainFigures(out, *label, acc, elapsed, drain)...)
	}
	// CPU from the start of the warm-up until every item was stored (or
	// the run's end without -clickhouse): all the work the items cost.
	figs = append(figs, cpu.figures(out, *label, acc)...)
	return recorder{*outPath}.record(figs...)
}

// openClients opens one client per ingest key of the comma-separated
// keys, over one HTTP client of conns connections closed after idle (0:
// never). On an error it returns the clients opened so far, for
// closeClients.
func openClients(endpoint, keys string, conns int, idle time.Duration) ([]*client.Client, error) {
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true, IdleConnTimeout: idle,
	}}
	var clients []*client.Client
	for _, k := range strings.Split(keys, ",") {
		c, err := client.New(client.Options{Endpoint: endpoint, Key: strings.TrimSpace(k), HTTPClient: hc, MaxRetries: 3})
		if err != nil {
			return clients, err
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// closeClients closes clients, the last opened first.
func closeClients(clients []*client.Client) {
	for i := len(clients) - 1; i >= 0; i-- {
		clients[i].Close(context.Background())
	}
}

// ingestLoad is the state the workers of one ingest run share.
type ingestLoad struct {
	batch       int
	total       int64
	limiter     *rate.Limiter
	measureFrom time.Time

	reserved, accepted, measured, dropped, failed atomic.Int64

	mu sync.Mutex
	// latencies are the requests' (from the encoded body's send to the
	// answer); callLatencies the client calls' (with the client's JSON
	// encoding and gzip).
	latencies, callLatencies []time.Duration
	firstErr                 error
}

// ingestPace is the run's pace: its description and the limiter of its
// requests (nil: as fast as the service answers). With half the target
// is half the last full-load rate recorded in the results file outPath.
func ingestPace(outPath string, half bool, target float64, batch int) (string, *rate.Limiter, error) {
	if half {
		full, err := lastFigure(outPath, "ingest", "full load", "items_per_s")
		if err != nil {
			return "", nil, fmt.Errorf("-half: %w", err)
		}
		target = full / 2
	}
	if target > 0 {
		return fmt.Sprintf("paced to %.0f items/s", target), rate.NewLimiter(rate.Limit(target/float64(batch)), 1), nil
	}
	return "as fast as the service answers", nil, nil
}

// ingestRSSFigures prints and returns the service's peak RSS, sampled and
// VmHWM.
func ingestRSSFigures(out io.Writer, pid int, label string, peakRSS float64) []figure {
	hwm, _ := procStatusKiB(pid, "VmHWM")
	fmt.Fprintf(out, "  service RSS: peak sampled during the run %.0f MiB, VmHWM since start %.0f MiB\n", peakRSS/1024, hwm/1024)
	return []figure{{"ingest", label, "rss_mib", peakRSS / 1024}, {"ingest", label, "vmhwm_mib", hwm / 1024}}
}

// drainFigures prints and returns the time the accepted items took to
// reach ClickHouse after the run and the end-to-end rate.
func drainFigures(out io.Writer, label string, acc int64, elapsed, drain time.Duration) []figure {
	e2e := float64(acc) / (elapsed + drain).Seconds()
	fmt.Fprintf(out, "  every accepted item was in ClickHouse %.1f s after the run: %.0f items/s end to end\n", drain.Seconds(), e2e)
	return []figure{{"ingest", label, "drain_s", drain.Seconds()}, {"ingest", label, "end_to_end_items_per_s", e2e}}
}

// quietCount waits for ClickHouse's merges to end and returns the count
// of the events table. Starting from a quiet server: merges left by a
// previous run (of this build or of the baseline, in its own database)
// would slow this one down.
func quietCount(ctx context.Context, counter *eventCounter, out io.Writer) (uint64, error) {
	if err := waitForMerges(ctx, counter.conn, "", 2*time.Minute, &progress{out: out, interval: 10 * time.Second}); err != nil {
		return 0, err
	}
	return counter.count(ctx)
}

// run starts conns workers, each with its own generator and the clients
// in turn, and waits for them.
func (l *ingestLoad) run(runCtx context.Context, conns int, clients []*client.Client, out io.Writer, start time.Time) {
	var wg sync.WaitGroup
	prefix := "b" + strconv.FormatInt(start.Unix(), 36)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(runCtx, newGenerator(uint64(w+1), fmt.Sprintf("%s-w%d-", prefix, w)), clients[w%len(clients)])
		}()
	}
	l.await(&wg, out, start)
}

// report prints the run's counts and latencies and returns their figures.
func (l *ingestLoad) report(out io.Writer, label string, elapsed, window time.Duration) []figure {
	acc := l.accepted.Load()
	itemsPerS := float64(l.measured.Load()) / window.Seconds()
	p50, p99 := percentile(l.latencies, 50), percentile(l.latencies, 99)
	fmt.Fprintf(out, "  accepted %d items (%d dropped, %d failed requests) in %.1f s; measured %d in %.1f s: %.0f items/s\n",
		acc, l.dropped.Load(), l.failed.Load(), elapsed.Seconds(), l.measured.Load(), window.Seconds(), itemsPerS)
	callP99 := percentile(l.callLatencies, 99)
	fmt.Fprintf(out, "  request latency over %d requests: p50 %.1f ms, p99 %.1f ms (p99 %.1f ms with the client's encoding and gzip)\n",
		len(l.latencies), ms(p50), ms(p99), ms(callP99))
	if l.firstErr != nil {
		fmt.Fprintf(out, "  first error: %v\n", l.firstErr)
	}
	return []figure{
		{"ingest", label, "items_per_s", itemsPerS},
		{"ingest", label, "p50_ms", ms(p50)},
		{"ingest", label, "p99_ms", ms(p99)},
		{"ingest", label, "call_p99_ms", ms(callP99)},
		{"ingest", label, "failed_requests", float64(l.failed.Load())},
	}
}

// worker posts batches of g's items through c until runCtx ends or the
// run's item count is reserved.
func (l *ingestLoad) worker(runCtx context.Context, g *generator, c *client.Client) {
	items := make([]analytics.Item, 0, l.batch)
	var lat, callLat []time.Duration
	defer func() {
		l.mu.Lock()
		l.latencies = append(l.latencies, lat...)
		l.callLatencies = append(l.callLatencies, callLat...)
		l.mu.Unlock()
	}()
	for runCtx.Err() == nil {
		n := l.batch
		if l.total > 0 {
			if r := l.reserved.Add(int64(n)); r > l.total {
				if n = n - int(r-l.total); n <= 0 {
					return
				}
			}
		}
		items = g.batch(items, n, time.Now())
		if l.limiter != nil && l.limiter.Wait(runCtx) != nil {
			return
		}
		// The request's latency runs from when the body, encoded and
		// gzipped, goes to the transport (its first connection request)
		// until the answer: the service's time, not the client's
		// encoding, which the call's latency (callLat) includes.
		var sent time.Time
		trace := &httptrace.ClientTrace{GetConn: func(string) {
			if sent.IsZero() {
				sent = time.Now()
			}
		}}
		t0 := time.Now()
		res, err := c.Send(httptrace.WithClientTrace(runCtx, trace), items)
		if err != nil {
			if runCtx.Err() != nil {
				return // the run ended mid-request: not a failure of the service
			}
			l.failed.Add(1)
			l.mu.Lock()
			if l.firstErr == nil {
				l.firstErr = err
			}
			l.mu.Unlock()
			continue
		}
		if t0.After(l.measureFrom) {
			end := time.Now()
			if sent.IsZero() {
				sent = t0
			}
			lat = append(lat, end.Sub(sent))
			callLat = append(callLat, end.Sub(t0))
			l.measured.Add(int64(res.Accepted))
		}
		l.accepted.Add(int64(res.Accepted))
		l.dropped.Add(int64(res.Dropped))
	}
}

// await waits for the workers of wg, printing the progress every few seconds.
func (l *ingestLoad) await(wg *sync.WaitGroup, out io.Writer, start time.Time) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	p := progress{out: out, interval: 5 * time.Second, last: start}
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(time.Second):
			el := time.Since(start).Seconds()
			p.printf(false, "  %5.1f s: %d items accepted, %.0f items/s\n", el, l.accepted.Load(), float64(l.accepted.Load())/el)
		}
	}
}

// waitDrained waits until the events table holds before+acc items and
// returns how long that took.
func waitDrained(ctx context.Context, counter *eventCounter, before uint64, acc int64) (time.Duration, error) {
	drainStart := time.Now()
	want := before + uint64(acc)
	for {
		n, err := counter.count(ctx)
		if err != nil {
			return 0, err
		}
		if n >= want {
			break
		}
		if time.Since(drainStart) > 5*time.Minute {
			return 0, fmt.Errorf("after 5 minutes ClickHouse holds %d of the %d accepted items", n-before, acc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(drainStart), nil
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
