package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The histograms of the service's own view of an ingest run, read from its
// /metrics before and after: the time it spent on each ingest request
// (from the request's arrival to its answer) and its log's fsyncs. Beside
// the load generator's latency they show where a tail comes from: the
// service's work, the disk, or the machine's cores (the load generator and
// ClickHouse beside it).
const (
	ingestHistogram = "telemetry_http_request_duration_seconds"
	syncHistogram   = "telemetry_wal_sync_duration_seconds"
)

// serverView is a snapshot of those histograms (nil: not served).
type serverView struct{ request, sync *dto.Histogram }

// scrapeServerView reads the histograms from endpoint's /metrics; a
// service that does not serve them (an older build) gives an empty view.
func scrapeServerView(ctx context.Context, endpoint string) serverView {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/metrics", nil)
	if err != nil {
		return serverView{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return serverView{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return serverView{}
	}
	return parseServerView(resp.Body)
}

// scrapeServerViewAfter reads the histograms once warmup has passed (or
// run ended): the measured window starts there, so the warm-up (first
// connections, the decoder's first batches, the flusher's first inserts)
// is not in the p99s.
func scrapeServerViewAfter(ctx, run context.Context, endpoint string, warmup time.Duration) <-chan serverView {
	view := make(chan serverView, 1)
	go func() {
		select {
		case <-time.After(warmup):
		case <-run.Done():
		}
		view <- scrapeServerView(ctx, endpoint)
	}()
	return view
}

func parseServerView(r io.Reader) serverView {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return serverView{}
	}
	var v serverView
	if f := families[ingestHistogram]; f != nil {
		for _, m := range f.GetMetric() {
			if labelOf(m, "route") == "/v1/ingest" && labelOf(m, "method") == "POST" {
				v.request = m.GetHistogram()
			}
		}
	}
	if f := families[syncHistogram]; f != nil && len(f.GetMetric()) == 1 {
		v.sync = f.GetMetric()[0].GetHistogram()
	}
	return v
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histQuantile is the q-quantile (0..1) of what a histogram counted
// between two snapshots, interpolated linearly within its bucket (as
// PromQL's histogram_quantile); NaN when nothing was counted or the
// snapshots are missing. Past the last bound it is that bound.
func histQuantile(before, after *dto.Histogram, q float64) float64 {
	if after == nil {
		return math.NaN()
	}
	prev := map[float64]uint64{}
	var prevCount uint64
	if before != nil {
		for _, b := range before.GetBucket() {
			prev[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		prevCount = before.GetSampleCount()
	}
	total := after.GetSampleCount() - prevCount
	if total == 0 {
		return math.NaN()
	}
	buckets := append([]*dto.Bucket(nil), after.GetBucket()...)
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].GetUpperBound() < buckets[j].GetUpperBound() })
	rank := q * float64(total)
	lower, below := 0.0, 0.0
	for _, b := range buckets {
		if math.IsInf(b.GetUpperBound(), 1) {
			break // past the last bound: that bound
		}
		n := float64(b.GetCumulativeCount() - prev[b.GetUpperBound()])
		if n >= rank {
			if n == below {
				return b.GetUpperBound()
			}
			return lower + (b.GetUpperBound()-lower)*(rank-below)/(n-below)
		}
		lower, below = b.GetUpperBound(), n
	}
	return lower
}

// serverViewFigures prints and returns the p99 of the service's own
// request time and of its fsyncs over a run (none when not served).
func serverViewFigures(out io.Writer, label string, before, after serverView) []figure {
	req, sync := histQuantile(before.request, after.request, 0.99), histQuantile(before.sync, after.sync, 0.99)
	var figs []figure
	var parts []string
	if !math.IsNaN(req) {
		parts = append(parts, fmt.Sprintf("request p99 %.1f ms", req*1000))
		figs = append(figs, figure{"ingest", label, "server_p99_ms", req * 1000})
	}
	if !math.IsNaN(sync) {
		parts = append(parts, fmt.Sprintf("log fsync p99 %.1f ms", sync*1000))
		figs = append(figs, figure{"ingest", label, "wal_sync_p99_ms", sync * 1000})
	}
	if len(parts) > 0 {
		fmt.Fprintf(out, "  the service's own view (its /metrics histograms, after the warm-up): %s\n", strings.Join(parts, ", "))
	}
	return figs
}
