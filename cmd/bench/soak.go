package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

// runSoak drives a steady paced load (half the last full-load figure by
// default) for a long time and prints, every -every, the service's RSS and
// its duplicate filter's size (the telemetry_dedup_* gauges of /metrics):
// memory must not grow with the ids (docs/exactly-once.md, "Bounded
// memory").
func runSoak(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench soak", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	keys := fs.String("keys", "", "ingest keys, comma-separated (workers use them in turn)")
	conns := fs.Int("conns", 8, "concurrent connections")
	duration := fs.Duration("duration", 30*time.Minute, "how long to run")
	every := fs.Duration("every", time.Minute, "print a sample this often")
	batch := fs.Int("batch", 500, "items per request")
	target := fs.Float64("rate", 0, "items/s (0: half the last 'full load' figure in -out)")
	pid := fs.Int("pid", 0, "the service's process id (its RSS)")
	outPath := fs.String("out", "", "results file: read for the full-load figure, figures appended")
	outage := fs.Duration("outage", 0, "how long ClickHouse is stopped in the middle (by the caller, scripts/bench.sh): recorded with the figures")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keys == "" || *pid == 0 {
		return errors.New("-keys and -pid are required")
	}
	if *target == 0 {
		full, err := lastFigure(*outPath, "ingest", "full load", "items_per_s")
		if err != nil {
			return fmt.Errorf("-rate 0 needs a full-load figure: %w", err)
		}
		*target = full / 2
	}
	clients, err := openClients(*endpoint, *keys, *conns, 0)
	defer closeClients(clients)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "soak: %.0f items/s over %d connections for %v, ClickHouse stopped for %v in the middle; a sample every %v\n",
		*target, *conns, *duration, *outage, *every)
	fmt.Fprintf(out, "  %8s %12s %10s %9s %11s %11s %12s %11s %12s\n", "elapsed", "accepted", "items/s", "RSS MiB",
		"exact ids", "exact MiB", "filter ids", "filter MiB", "log backlog")

	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	limiter := rate.NewLimiter(rate.Limit(*target/float64(*batch)), 1)
	var accepted, failed atomic.Int64
	var wg sync.WaitGroup
	prefix := "s" + strconv.FormatInt(time.Now().Unix(), 36)
	for w := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newGenerator(uint64(1000+w), fmt.Sprintf("%s-w%d-", prefix, w))
			soakWorker(runCtx, limiter, g, clients[w%len(clients)], *batch, &accepted, &failed)
		}()
	}
	start := time.Now()
	var samples []soakSample
	sample := func() {
		samples = append(samples, takeSoakSample(ctx, out, *endpoint, *pid, start, accepted.Load()))
	}
	sample()
	tick := time.NewTicker(*every)
	for runCtx.Err() == nil {
		select {
		case <-runCtx.Done():
		case <-tick.C:
			sample()
		}
	}
	tick.Stop()
	wg.Wait()
	sample()

	figs := soakReport(out, samples, *target, failed.Load())
	figs = append(figs, figure{"soak", "soak", "outage_minutes", outage.Minutes()})
	return recorder{*outPath}.record(figs...)
}

// soakReport prints the soak's outcome against goal 4 and returns its
// figures: those of soakFigures, the peak backlog and the peak exact ids.
func soakReport(out io.Writer, samples []soakSample, target float64, failed int64) []figure {
	last := samples[len(samples)-1]
	peak, backlog, exact := 0.0, 0.0, 0.0
	for _, s := range samples {
		peak = max(peak, s.rssMiB)
		backlog = max(backlog, s.gauges["telemetry_wal_backlog_records"])
		exact = max(exact, s.gauges["telemetry_dedup_exact_ids"])
	}
	trend := rssTrend(samples)
	verdict := "ok"
	if peak >= soakRSSGoalMiB {
		verdict = "MISS"
	}
	fmt.Fprintf(out, "  %d items accepted (%d failed requests): %.0f items/s; RSS peak %.0f MiB (goal < %d MiB: %s), %+.1f MiB/min over the second half; peak backlog %.0f records, peak exact ids %.0f\n",
		last.accepted, failed, float64(last.accepted)/last.at.Seconds(), peak, soakRSSGoalMiB, verdict, trend, backlog, exact)
	return append(soakFigures(last, peak, trend, target, failed),
		figure{"soak", "soak", "backlog_peak_records", backlog}, figure{"soak", "soak", "exact_ids_peak", exact})
}

// soakRSSGoalMiB is goal 4's bound on the service's RSS during the soak
// (docs/benchmarks.md).
const soakRSSGoalMiB = 512

// soakFigures are the soak's figures: its last sample, the peak RSS and
// its trend, the target rate and the failed requests.
func soakFigures(last soakSample, peak, trend, target float64, failed int64) []figure {
	return []figure{
		{"soak", "soak", "minutes", last.at.Minutes()},
		{"soak", "soak", "items_per_s", float64(last.accepted) / last.at.Seconds()},
		{"soak", "soak", "target_items_per_s", target},
		{"soak", "soak", "items", float64(last.accepted)},
		{"soak", "soak", "rss_peak_mib", peak},
		{"soak", "soak", "rss_trend_mib_per_min", trend},
		{"soak", "soak", "exact_ids", last.gauges["telemetry_dedup_exact_ids"]},
		{"soak", "soak", "filter_mib", (last.gauges["telemetry_dedup_exact_bytes"] + last.gauges["telemetry_dedup_filter_bytes"]) / (1 << 20)},
		{"soak", "soak", "unverified", last.gauges["telemetry_dedup_unverified_total"]},
		{"soak", "soak", "failed_requests", float64(failed)},
	}
}

// soakWorker posts batches of g's items through c at the limiter's pace
// until runCtx ends.
func soakWorker(runCtx context.Context, limiter *rate.Limiter, g *generator, c *client.Client, batch int, accepted, failed *atomic.Int64) {
	items := make([]analytics.Item, 0, batch)
	for limiter.Wait(runCtx) == nil {
		items = g.batch(items, batch, time.Now())
		res, err := c.Send(runCtx, items)
		if err != nil {
			if runCtx.Err() == nil {
				failed.Add(1)
			}
			continue
		}
		accepted.Add(int64(res.Accepted))
	}
}

// takeSoakSample samples the service's RSS and duplicate-filter gauges
// and prints the sample.
func takeSoakSample(ctx context.Context, out io.Writer, endpoint string, pid int, start time.Time, accepted int64) soakSample {
	s := soakSample{at: time.Since(start), accepted: accepted}
	s.rssMiB, _ = procStatusKiB(pid, "VmRSS")
	s.rssMiB /= 1024
	s.gauges, _ = scrapeGauges(ctx, endpoint+"/metrics", "telemetry_")
	fmt.Fprintf(out, "  %7.0fs %12d %10.0f %9.0f %11.0f %11.1f %12.0f %11.1f %12.0f\n", s.at.Seconds(), s.accepted,
		float64(s.accepted)/max(s.at.Seconds(), 1e-9), s.rssMiB, s.gauges["telemetry_dedup_exact_ids"],
		s.gauges["telemetry_dedup_exact_bytes"]/(1<<20), s.gauges["telemetry_dedup_filter_ids"],
		s.gauges["telemetry_dedup_filter_bytes"]/(1<<20), s.gauges["telemetry_wal_backlog_records"])
	return s
}

// rssTrend is the least-squares slope of RSS per minute over the second
// half of the run (the first half includes the exact table filling up),
// so that the collector's sawtooth does not decide it.
func rssTrend(samples []soakSample) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples[len(samples)/2:] {
		x := s.at.Minutes()
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+s.rssMiB, sxx+x*x, sxy+x*s.rssMiB
	}
	trend := 0.0
	if d := n*sxx - sx*sx; d > 0 {
		trend = (n*sxy - sx*sy) / d
	}
	return trend
}

type soakSample struct {
	at       time.Duration
	accepted int64
	rssMiB   float64
	gauges   map[string]float64
}

// scrapeGauges reads the unlabelled samples whose name starts with prefix
// from a Prometheus text endpoint.
func scrapeGauges(ctx context.Context, url, prefix string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, prefix) {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}
