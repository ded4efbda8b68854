package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// scrape reads a Prometheus text exposition into series -> value, the
// series written as exposed (`name{label="v"}`).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// settled scrapes url once the instance's write-ahead log is flushed: the
// flush metrics are counted before the log is freed, and a read may see
// the rows a moment before.
func settled(t *testing.T, url string) map[string]float64 {
	t.Helper()
	return settledWithin(t, url, 10*time.Second)
}

// settledWithin is settled with its own patience.
func settledWithin(t *testing.T, url string, d time.Duration) map[string]float64 {
	t.Helper()
	var m map[string]float64
	eventually(t, d, func() error {
		m = scrape(t, url)
		if n := m["telemetry_wal_backlog_records"]; n != 0 {
			return fmt.Errorf("%s: %v records still in the write-ahead log", url, n)
		}
		return nil
	})
	return m
}

// moved checks that each series grew by at least its minimum between two
// scrapes.
func moved(t *testing.T, who string, before, after map[string]float64, min map[string]float64) {
	t.Helper()
	for series, d := range min {
		if got := after[series] - before[series]; got < d {
			t.Errorf("%s: %s grew by %v, want at least %v", who, series, got, d)
		}
	}
}

// testItems returns n valid items with ids prefix-0..n-1, a minute apart
// ending now.
func testItems(prefix string, n int) []map[string]any {
	now := time.Now().UTC().Add(-time.Minute)
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("%s-%d", prefix, i), "timestamp": now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339Nano),
			"session_id": prefix, "method": "tools/call", "name": "search", "duration_ms": float64(10 + i)}
	}
	return items
}

// Two instances on one PostgreSQL and one ClickHouse database, each with
// its own write-ahead log and node id: ingest through either is read
// through both, a rule fires once although both evaluate every second, a
// key deleted on one stops working on the other within 5 seconds, the
// nightly pass runs once for both, and each instance's /metrics counts its
// own work.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	cfgA := testConfig(t, testenv.ClickHouseAddr(t))
	cfgA.Ingest.NodeID = "node-a"
	cfgA.Nightly.Enabled, cfgA.Nightly.CatchUpDays = true, 3
	cfgA.Alerting.EvaluateInterval = time.Second
	// A PostgreSQL database of its own: the two evaluators count the
	// firings of every enabled rule they see, and the package's shared
	// database holds other tests' rules.
	own := new(testenv.PostgresDB)
	cfgA.Postgres.URL = own.URL(t)
	t.Cleanup(own.Drop)
	cfgB := cfgA
	cfgB.Ingest.NodeID, cfgB.Ingest.WALDir = "node-b", t.TempDir()
	_, baseA := startMain(t, cfgA)
	_, baseB := startMain(t, cfgB)
	a, b := api{t, baseA}, api{t, baseB}
	token, mcp, key := a.newTenant("twin")

	metricsA, metricsB := scrape(t, baseA+"/metrics"), scrape(t, baseB+"/metrics")
	for i, base := range []string{baseA, baseB, baseA} {
		status, res := postIngest(t, base, key, testItems(fmt.Sprint("via", i), 40), false)
		if status != 202 || num(res["accepted"]) != 40 {
			t.Fatalf("ingest via %s: %d %v", base, status, res)
		}
	}
	today := time.Now().UTC().Format(time.DateOnly)
	for _, c := range []api{a, b} {
		eventually(t, 10*time.Second, func() error {
			_, o := c.do("GET", "/v1/mcps/"+mcp+"/overview?from="+today+"&to="+today, token, nil)
			if num(o["calls"]) != 120 {
				return fmt.Errorf("%s overview: calls %v, want 120 (ingested through both)", c.base, o["calls"])
			}
			return nil
		})
	}
	accepted := `telemetry_ingest_items_total{outcome="accepted"}`
	ingestOK := `telemetry_http_requests_total{method="POST",route="/v1/ingest",status="202"}`
	afterA, afterB := settled(t, baseA+"/metrics"), settled(t, baseB+"/metrics")
	moved(t, "A", metricsA, afterA, map[string]float64{accepted: 80, ingestOK: 2, "telemetry_flush_batch_rows_count": 1, "telemetry_flush_batch_rows_sum": 80})
	moved(t, "B", metricsB, afterB, map[string]float64{accepted: 40, ingestOK: 1, "telemetry_flush_batch_rows_count": 1, "telemetry_flush_batch_rows_sum": 40})
	if got := afterB[accepted] - metricsB[accepted]; got != 40 {
		t.Errorf("B accepted %v items by its /metrics, want its own 40", got)
	}
	for who, m := range map[string]map[string]float64{"A": afterA, "B": afterB} {
		if _, ok := m["telemetry_wal_backlog_bytes"]; !ok {
			t.Errorf("%s: no write-ahead-log backlog gauge", who)
		}
	}

	// A rule that holds fires once, whichever instance evaluates.
	rule := a.must(201, "POST", "/v1/mcps/"+mcp+"/rules", token, map[string]any{"name": "busy", "metric": "calls",
		"comparator": ">", "threshold": 0, "window_minutes": 60, "channels": []string{"in_app"}})
	eventually(t, 20*time.Second, func() error {
		if r := a.must(200, "GET", "/v1/rules/"+rule["id"].(string), token, nil); r["state"] != "firing" {
			return fmt.Errorf("rule state %v", r["state"])
		}
		return nil
	})
	passes := func() float64 {
		n := 0.0
		for _, base := range []string{baseA, baseB} {
			m := scrape(t, base+"/metrics")
			for _, outcome := range []string{"ok", "skipped", "failed"} {
				n += m[`telemetry_alert_evaluator_runs_total{outcome="`+outcome+`"}`]
			}
		}
		return n
	}
	fired := passes()
	eventually(t, 30*time.Second, func() error { // a few more passes on both
		if n := passes(); n < fired+4 {
			return fmt.Errorf("%v evaluator passes since the firing", n-fired)
		}
		return nil
	})
	if inbox := a.must(200, "GET", "/v1/account/inbox", token, nil); num(inbox["unread_count"]) != 1 {
		t.Errorf("inbox after the rule fired: %v, want exactly one item", inbox)
	}
	firings := scrape(t, baseA+"/metrics")["telemetry_alert_firings_total"] + scrape(t, baseB+"/metrics")["telemetry_alert_firings_total"]
	if firings != 1 {
		t.Errorf("%v firings counted by the two instances, want 1", firings)
	}

	// A key deleted through A is refused by B, which had it cached.
	var keyID string
	for _, k := range a.must(200, "GET", "/v1/mcps/"+mcp+"/keys", token, nil)["items"].([]any) {
		keyID = k.(map[string]any)["id"].(string)
	}
	a.must(204, "DELETE", "/v1/keys/"+keyID, token, nil)
	deleted := time.Now()
	eventually(t, 5*time.Second, func() error {
		if status, _ := postIngest(t, baseB, key, testItems("late", 1), false); status != 401 {
			return fmt.Errorf("B answers %d %s after the key was deleted on A", status, time.Since(deleted))
		}
		return nil
	})

	// The nightly pass ran once per day although both instances caught up.
	conn, err := ch.Open(&ch.Options{Addr: cfgA.ClickHouse.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var days, runs uint64
	eventually(t, 20*time.Second, func() error {
		if err := conn.QueryRow(context.Background(), "SELECT uniqExact(day), count() FROM "+cfgA.ClickHouse.Database+".nightly_runs").Scan(&days, &runs); err != nil {
			return err
		}
		if days != 3 {
			return fmt.Errorf("nightly days computed: %d, want the 3 catch-up days", days)
		}
		return nil
	})
	if runs != days {
		t.Errorf("nightly: %d runs for %d days: the pass ran on both instances", runs, days)
	}
}

// /metrics is served by the API, on its own address, or not at all.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	chAddr := testenv.ClickHouseAddr(t)
	for _, tc := range []struct {
		name    string
		enabled bool
		addr    string
	}{
		{"with the API", true, ""},
		{"own address", true, "127.0.0.1:0"},
		{"off", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, chAddr)
			cfg.Metrics.Enabled, cfg.Metrics.Addr = tc.enabled, tc.addr
			m, base := startMain(t, cfg)
			res, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			onAPI := tc.enabled && tc.addr == ""
			if onAPI {
				scrape(t, base+"/metrics")
			} else if res.StatusCode != 404 || res.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("API /metrics: %d %s, want a 404 problem", res.StatusCode, res.Header.Get("Content-Type"))
			}
			if tc.addr == "" {
				if m.MetricsAddr() != "" {
					t.Errorf("a metrics listener on %s", m.MetricsAddr())
				}
				return
			}
			got := scrape(t, "http://"+m.MetricsAddr()+"/metrics")
			if _, ok := got["telemetry_wal_backlog_bytes"]; !ok {
				t.Errorf("own address: no telemetry metrics in %d series", len(got))
			}
		})
	}
}

// A second instance with the node id of a running one is refused: it
// would take the first one's log records for its own.
func TestNodeIDInUse(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Ingest.NodeID = testenv.Name("node")
	startMain(t, cfg)
	cfg.Ingest.WALDir = t.TempDir()
	m := NewMain(cfg, quiet)
	m.NodeIDWait = time.Second
	defer m.Close()
	err := m.Open(context.Background())
	if telemetry.ErrorCode(err) != telemetry.ECONFLICT || !strings.Contains(err.Error(), cfg.Ingest.NodeID) {
		t.Fatalf("second instance with node id %s: %v, want a conflict naming it", cfg.Ingest.NodeID, err)
	}
	// Another id is fine.
	cfg.Ingest.NodeID += "-2"
	startMain(t, cfg)
}

// TestSharedDedupAcrossInstances: with ingest.shared_dedup, the same
// batches sent to two instances at once (a load balancer's retry landing
// elsewhere) are accepted once in total and stored once; the restarted
// instance still knows them without loading anything from ClickHouse.
func TestSharedDedupAcrossInstances(t *testing.T) {
	t.Parallel()
	cfgA := testConfig(t, testenv.ClickHouseAddr(t))
	cfgA.Ingest.NodeID, cfgA.Ingest.SharedDedup = "shared-a", true
	cfgB := cfgA
	cfgB.Ingest.NodeID, cfgB.Ingest.WALDir = "shared-b", t.TempDir()
	_, baseA := startMain(t, cfgA)
	_, baseB := startMain(t, cfgB)
	_, mcp, key := api{t, baseA}.newTenant("shared")

	const batches, perBatch = 20, 50
	var (
		mu       sync.Mutex
		accepted float64
		wg       sync.WaitGroup
	)
	for i := range batches {
		items := testItems(fmt.Sprint("shared", i), perBatch)
		for _, base := range []string{baseA, baseB, baseA, baseB} {
			wg.Go(func() {
				// A payload whose ids another request is accepting right
				// now is answered 503 with Retry-After (pending
				// reservations, docs/exactly-once.md): retry, as clients do.
				status, res := postIngest(t, base, key, items, false)
				for try := 0; status == 503 && try < 20; try++ {
					time.Sleep(time.Second)
					status, res = postIngest(t, base, key, items, false)
				}
				if status != 202 {
					t.Errorf("ingest via %s: %d %v", base, status, res)
					return
				}
				mu.Lock()
				accepted += num(res["accepted"])
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if accepted != batches*perBatch {
		t.Fatalf("accepted %v items over both instances, want %d (each once)", accepted, batches*perBatch)
	}
	var want []string
	for i := range batches {
		for j := range perBatch {
			want = append(want, fmt.Sprintf("shared%d-%d", i, j))
		}
	}
	waitStoredOnce(t, testenv.ClickHouseAddr(t), cfgA.ClickHouse.Database, mcp, want)

	// A third instance, new log and all: it loads nothing and still drops them.
	cfgC := cfgA
	cfgC.Ingest.NodeID, cfgC.Ingest.WALDir = "shared-c", t.TempDir()
	_, baseC := startMain(t, cfgC)
	if status, res := postIngest(t, baseC, key, testItems("shared3", perBatch), false); status != 202 || num(res["accepted"]) != 0 {
		t.Fatalf("retry through a new instance: %d %v", status, res)
	}
}
