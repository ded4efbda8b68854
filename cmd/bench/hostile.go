package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// runHostile measures what hostile bodies cost the service: normal ingest
// from one key, first alone, then while other workers post gzip bombs
// ({"items":[{},{},…]}, 1 MiB inflated) and OTLP bodies of empty spans
// with another key. It reports the normal key's p99 in both runs, the
// service's peak RSS and the hostile answers' statuses (goals: RSS under
// 512 MiB, no 5xx but 503, p99 within 2x of the unloaded run).
func runHostile(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hostile", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	keys := fs.String("keys", "", "two ingest keys, comma-separated: the normal client's, the attacker's")
	duration := fs.Duration("duration", 20*time.Second, "length of each run")
	bombs := fs.Int("bombs", 20, "concurrent gzip-bomb posters")
	spans := fs.Int("spans", 20, "concurrent OTLP empty-span posters")
	pid := fs.Int("pid", 0, "the service's process id, to report its peak RSS")
	outPath := fs.String("out", "", "append the figures to this results file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	k := strings.Split(*keys, ",")
	if len(k) < 2 {
		return errors.New("-keys needs two keys")
	}
	normalKey, hostileKey := strings.TrimSpace(k[0]), strings.TrimSpace(k[1])
	h := &hostileClient{endpoint: *endpoint, hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}}
	bomb := gzipBest([]byte(`{"items":[` + strings.TrimSuffix(strings.Repeat("{},", (1<<20-12)/3), ",") + `]}`))
	empty := gzipBest([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.TrimSuffix(strings.Repeat("{},", (1<<20-60)/3), ",") + `]}]}]}`))

	fmt.Fprintf(out, "hostile: normal ingest alone for %v\n", *duration)
	base, baseBad, err := h.normal(ctx, normalKey, *duration)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "hostile: normal ingest with %d gzip bombs (%d bytes each) and %d OTLP empty-span bodies (%d bytes) for %v\n",
		*bombs, len(bomb), *spans, len(empty), *duration)
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	rss := startRSSSampler(runCtx, *pid)
	var statuses sync.Map // status -> *atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < *bombs+*spans; i++ {
		path, body := "/v1/ingest", bomb
		if i >= *bombs {
			path, body = "/v1/otlp/v1/traces", empty
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.attack(runCtx, path, hostileKey, body, &statuses)
		}()
	}
	loaded, loadedBad, err := h.normal(ctx, normalKey, *duration)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	peak := rss.wait() / 1024
	total, fiveXX, parts := countStatuses(&statuses)
	p99a, p99b := percentile(base, 99), percentile(loaded, 99)
	ratio := float64(p99b) / float64(max(p99a, time.Microsecond))
	fmt.Fprintf(out, "  hostile answers: %d (%s); 5xx other than 503: %d (goal 0)\n", total, strings.Join(parts, ", "), fiveXX)
	fmt.Fprintf(out, "  normal key p99: alone %.1f ms (%d requests, %d refused), under attack %.1f ms (%d requests, %d refused): %.2fx (goal <= 2x)\n",
		ms(p99a), len(base), baseBad, ms(p99b), len(loaded), loadedBad, ratio)
	if *pid != 0 {
		fmt.Fprintf(out, "  service RSS peak under attack: %.0f MiB (goal < 512)\n", peak)
	}
	return recorder{*outPath}.record(
		figure{"hostile", "normal key alone", "p99_ms", ms(p99a)},
		figure{"hostile", "normal key under attack", "p99_ms", ms(p99b)},
		figure{"hostile", "p99 ratio", "x", ratio},
		figure{"hostile", "5xx other than 503", "count", float64(fiveXX)},
		figure{"hostile", "service peak rss", "rss_mib", peak},
	)
}

// gzipBest is b compressed with gzip at its best compression.
func gzipBest(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// hostileClient posts the hostile run's requests to the service.
type hostileClient struct {
	endpoint string
	hc       *http.Client
	seq      atomic.Int64 // the normal items' ids
}

// post posts body to path with key and returns the answer's status and
// how long it took.
func (h *hostileClient) post(ctx context.Context, path, key string, body []byte, gzipped bool) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", h.endpoint+path, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if gzipped {
		req.Header.Set("Content-Encoding", "gzip")
	}
	start := time.Now()
	res, err := h.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, time.Since(start), nil
}

// normal posts batches of 100 valid items from 4 workers for d and
// returns the request latencies.
func (h *hostileClient) normal(ctx context.Context, key string, d time.Duration) ([]time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var bad int
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				code, took, err := h.post(ctx, "/v1/ingest", key, h.normalBatch(), false)
				if err != nil {
					continue // the run ended
				}
				mu.Lock()
				if code == http.StatusAccepted {
					lat = append(lat, took)
				} else {
					bad++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lat, bad, nil
}

// normalBatch is a body of 100 valid items.
func (h *hostileClient) normalBatch() []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"h%d","timestamp":%q,"session_id":"s","method":"tools/call","name":"search","duration_ms":12}`, h.seq.Add(1), ts)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// attack posts the gzipped body to path with key until ctx ends, counting
// the answers' statuses in statuses (status -> *atomic.Int64).
func (h *hostileClient) attack(ctx context.Context, path, key string, body []byte, statuses *sync.Map) {
	for ctx.Err() == nil {
		if code, _, err := h.post(ctx, path, key, body, true); err == nil {
			v, _ := statuses.LoadOrStore(code, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		}
	}
}

// countStatuses sums the statuses counted by attack: all, the 5xx other
// than 503, and one "status: count" part per status.
func countStatuses(statuses *sync.Map) (total, fiveXX int64, parts []string) {
	statuses.Range(func(k, v any) bool {
		n := v.(*atomic.Int64).Load()
		total += n
		if c := k.(int); c >= 500 && c != http.StatusServiceUnavailable {
			fiveXX += n
		}
		parts = append(parts, fmt.Sprintf("%d: %d", k.(int), n))
		return true
	})
	return total, fiveXX, parts
}
