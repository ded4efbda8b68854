package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
)

// readEndpoints are the timed reads, in print order.
var readEndpoints = []string{"overview", "tools", "tool detail", "insights", "sessions"}

// runReads seeds a large history straight into the service's ClickHouse
// database (the big MCP's id is one registered through the API, so the
// HTTP reads authorise), then times every read endpoint through HTTP over
// 7, 90 and 365 days, and the same figures computed by plain aggregates
// over the raw events table.
func runReads(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench reads", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	token := fs.String("token", "", "session token of the account owning -mcp")
	mcp := fs.String("mcp", "", "id of a registered MCP: the big one of the seeded history")
	account := fs.String("account", "", "account id the seeded items belong to")
	addr := fs.String("clickhouse", "127.0.0.1:9000", "ClickHouse native address")
	db := fs.String("database", "telemetry", "the service's ClickHouse database")
	events := fs.Int64("events", 100_000_000, "events to seed (0: do not seed, measure what is there)")
	days := fs.Int("days", 365, "days of history, ending today")
	mcps := fs.Int("mcps", 100, "MCPs in the history; the big one holds -share of the events")
	share := fs.Float64("share", 0.5, "share of the events held by the big MCP")
	reps := fs.Int("reps", 20, "timed HTTP requests per endpoint and range (after one warm-up)")
	rawReps := fs.Int("raw-reps", 3, "timed raw aggregates per endpoint and range (after one warm-up)")
	tool := fs.String("tool", "search_docs", "tool of the tool-detail read (the most called one of the history)")
	mergeWait := fs.Duration("merge-wait", 10*time.Minute, "longest wait for background merges after seeding")
	outPath := fs.String("out", "", "append the figures to this results file")
	seedOnly := fs.Bool("seed-only", false, "seed (and wait for merges), time nothing: for `bench export` alone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" || *mcp == "" {
		return errors.New("-token and -mcp are required")
	}
	conn, err := openCH(ctx, *addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	p := &progress{out: out, interval: 10 * time.Second}

	if *events > 0 {
		if err := seed(ctx, out, p, *addr, *db, *mcp, *account, *events, *days, *mcps, *share); err != nil {
			return err
		}
	}
	if err := waitForMerges(ctx, conn, *db, *mergeWait, p); err != nil {
		return err
	}
	if *seedOnly {
		return nil
	}

	api := &apiClient{base: strings.TrimRight(*endpoint, "/"), token: *token,
		hc: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DisableCompression: true}}}
	today := analytics.UTCDay(time.Now())
	rt := readTimer{api: api, conn: conn, reps: *reps, rawReps: *rawReps}
	fmt.Fprintf(out, "\nreads of MCP %s: HTTP p50/p95 over %d requests, raw aggregate over events p50/p95 over %d runs\n", *mcp, *reps, *rawReps)
	fmt.Fprintf(out, "%-12s %6s %10s %10s %10s %10s %9s\n", "endpoint", "range", "HTTP p50", "HTTP p95", "raw p50", "raw p95", "raw/HTTP")
	var figs []figure
	for _, rangeDays := range []int{7, 90, 365} {
		f, err := rt.endpoints(ctx, out, *db, *mcp, *tool, today, rangeDays)
		if err != nil {
			return err
		}
		figs = append(figs, f...)
	}
	analyst, err := analystReads(ctx, api, conn, *db, *mcp, today)
	if err != nil {
		return err
	}
	for _, a := range analyst {
		t, err := rt.measure(ctx, a.name, a.path, a.raw)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-26s %7.1f ms %7.1f ms %7.0f ms %7.0f ms %8.1fx\n", a.name, ms(t.h50), ms(t.h95), ms(t.r50), ms(t.r95), t.ratio)
		figs = append(figs, t.figures(a.name)...)
	}
	mcpFigs, err := mcpReads(ctx, api, *mcp, *tool, today, *reps, out)
	if err != nil {
		return err
	}
	figs = append(figs, mcpFigs...)
	figs = append(figs, historyFigures(ctx, out, conn, *db, *mcp)...)
	return recorder{*outPath}.record(figs...)
}

// historyFigures prints and returns the count of the MCP's events (none
// when the count fails).
func historyFigures(ctx context.Context, out io.Writer, conn driver.Conn, db, mcp string) []figure {
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".events WHERE mcp_id = ?", mcp).Scan(&n); err != nil {
		return nil
	}
	fmt.Fprintf(out, "the MCP holds %d events\n", n)
	return []figure{{"reads", "history", "mcp_events", float64(n)}}
}

// readTimer times reads through HTTP and their raw aggregates.
type readTimer struct {
	api           *apiClient
	conn          driver.Conn
	reps, rawReps int
}

// readTimes are the medians and 95th percentiles of a read through HTTP
// and of its raw aggregate, and the ratio of the medians (raw / HTTP).
type readTimes struct {
	h50, h95, r50, r95 time.Duration
	ratio              float64
}

// measure times the HTTP read of path and the raw statements; label names
// the read in errors.
func (rt readTimer) measure(ctx context.Context, label, path string, raw []string) (readTimes, error) {
	httpTimes, err := timeN(rt.reps, func() error {
		_, err := rt.api.do(ctx, "GET", path, nil, nil, 200)
		return err
	})
	if err != nil {
		return readTimes{}, fmt.Errorf("%s: %w", label, err)
	}
	rawTimes, err := timeN(rt.rawReps, func() error { return runRaw(ctx, rt.conn, raw) })
	if err != nil {
		return readTimes{}, fmt.Errorf("raw %s: %w", label, err)
	}
	t := readTimes{h50: percentile(httpTimes, 50), h95: percentile(httpTimes, 95), r50: percentile(rawTimes, 50), r95: percentile(rawTimes, 95)}
	t.ratio = ms(t.r50) / max(ms(t.h50), 0.001)
	return t, nil
}

// figures are t's figures under name.
func (t readTimes) figures(name string) []figure {
	return []figure{
		{"reads", name, "http_p50_ms", ms(t.h50)}, {"reads", name, "http_p95_ms", ms(t.h95)},
		{"reads", name, "raw_p50_ms", ms(t.r50)}, {"reads", name, "raw_p95_ms", ms(t.r95)},
		{"reads", name, "ratio", t.ratio}}
}

// endpoints times every read endpoint over the rangeDays days ending today.
func (rt readTimer) endpoints(ctx context.Context, out io.Writer, db, mcp, tool string, today time.Time, rangeDays int) ([]figure, error) {
	from := today.AddDate(0, 0, -(rangeDays - 1))
	q := url.Values{"from": {from.Format(analytics.DateLayout)}, "to": {today.Format(analytics.DateLayout)}}.Encode()
	paths := map[string]string{
		"overview":    "/v1/mcps/" + mcp + "/overview?" + q,
		"tools":       "/v1/mcps/" + mcp + "/tools?" + q,
		"tool detail": "/v1/mcps/" + mcp + "/tools/" + url.PathEscape(tool) + "?" + q,
		"insights":    "/v1/mcps/" + mcp + "/insights?" + q,
		"sessions":    "/v1/mcps/" + mcp + "/sessions?" + q,
	}
	raws := rawQueries(db, mcp, tool, from, today.AddDate(0, 0, 1))
	if err := checkCalls(ctx, rt.api, rt.conn, paths["overview"], db, mcp, from, today.AddDate(0, 0, 1)); err != nil {
		return nil, fmt.Errorf("%dd: %w", rangeDays, err)
	}
	var figs []figure
	for _, ep := range readEndpoints {
		name := fmt.Sprintf("%s %dd", ep, rangeDays)
		t, err := rt.measure(ctx, name, paths[ep], raws[ep])
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "%-12s %5dd %7.1f ms %7.1f ms %7.0f ms %7.0f ms %8.1fx\n", ep, rangeDays, ms(t.h50), ms(t.h95), ms(t.r50), ms(t.r95), t.ratio)
		figs = append(figs, t.figures(name)...)
	}
	return figs, nil
}

// checkCalls compares the overview's calls with a count of the raw rows,
// so that a misconfigured run (reads of an empty or other MCP) cannot pass
// for a fast one.
func checkCalls(ctx context.Context, api *apiClient, conn driver.Conn, path, db, mcp string, from, to time.Time) error {
	var ov struct {
		Calls uint64 `json:"calls"`
	}
	if _, err := api.do(ctx, "GET", path, nil, &ov, 200); err != nil {
		return err
	}
	var raw uint64
	q := "SELECT count() FROM " + db + ".events WHERE mcp_id = ? AND ts >= " + timeLit(from) + " AND ts < " + timeLit(to)
	if err := conn.QueryRow(ctx, q, mcp).Scan(&raw); err != nil {
		return err
	}
	if ov.Calls != raw {
		return fmt.Errorf("the overview counts %d calls, the events table %d", ov.Calls, raw)
	}
	return nil
}

// timeN runs f once to warm up, then n times, and returns the durations.
func timeN(n int, f func() error) ([]time.Duration, error) {
	if err := f(); err != nil {
		return nil, err
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}

// seed writes the synthetic history with the store's SeedHistory.
func seed(ctx context.Context, out io.Writer, p *progress, addr, db, mcp, account string, events int64, days, mcps int, share float64) error {
	store, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{addr}, Database: db})
	if err != nil {
		return err
	}
	defer store.Close()
	ids := []string{mcp}
	for i := 1; i < mcps; i++ {
		ids = append(ids, fmt.Sprintf("seed-mcp-%04d", i))
	}
	fmt.Fprintf(out, "seeding %d events over %d days into %s: %d MCPs, %s holding %.0f%%\n", events, days, db, mcps, mcp, share*100)
	start := time.Now()
	p.last = start
	err = chtest.SeedHistory(ctx, store, chtest.SeedOptions{
		Events: events, Days: days, MCPs: mcps, BigMCPShare: share, MCPIDs: ids, AccountID: account,
		Progress: func(done, total int64) {
			el := time.Since(start).Seconds()
			rate := float64(done) / el
			p.printf(done == total, "  seeded %d of %d events (%.0f%%) in %.0f s, %.0f events/s, about %.0f s left\n",
				done, total, 100*float64(done)/float64(total), el, rate, float64(total-done)/rate)
		},
	})
	if err != nil {
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(out, "  seeded in %.0f s\n", el.Seconds())
	return nil
}

// analystRead is one timed analyst read (docs/analyst-reads.md) with its
// raw counterpart.
type analystRead struct {
	name, path string
	raw        []string
}

// analystNames are the analyst reads, in print order (summary.go).
var analystNames = []string{"breakdown client_name 365d", "session timeline", "hourly overview 14d"}

// analystReads builds the analyst reads of the big MCP: a breakdown by
// client name over 365 days, the timeline of its newest session (the raw
// side finds the session's items without the session index: a scan of the
// MCP's events), and the hourly overview of 14 days.
func analystReads(ctx context.Context, api *apiClient, conn driver.Conn, db, mcp string, today time.Time) ([]analystRead, error) {
	var page struct {
		Items []struct {
			SessionID string `json:"session_id"`
		} `json:"items"`
	}
	if _, err := api.do(ctx, "GET", "/v1/mcps/"+mcp+"/sessions?limit=1", nil, &page, 200); err != nil {
		return nil, err
	}
	if len(page.Items) == 0 {
		return nil, errors.New("the big MCP has no session in the last 7 days")
	}
	session := page.Items[0].SessionID
	year := today.AddDate(0, 0, -364)
	fortnight := today.AddDate(0, 0, -13)
	end := today.AddDate(0, 0, 1)
	q := func(from time.Time, extra string) string {
		return url.Values{"from": {from.Format(analytics.DateLayout)}, "to": {today.Format(analytics.DateLayout)}}.Encode() + extra
	}
	events := db + ".events"
	latency := "sumIf(duration_ms, has_duration = 1) / greatest(sum(has_duration), 1) AS avg_ms, quantilesTDigestIf(0.5, 0.95)(duration_ms, has_duration)"
	return []analystRead{
		{analystNames[0], "/v1/mcps/" + mcp + "/breakdown?" + q(year, "&by=client_name"), []string{
			`SELECT CAST(client_name AS String) AS v, count() AS c, sum(is_error), ` + latency + `, uniq(session_id), uniq(user_key)
			FROM ` + events + ` WHERE mcp_id = ` + quote(mcp) + ` AND ts >= ` + timeLit(year) + ` AND ts < ` + timeLit(end) + `
			GROUP BY v ORDER BY c DESC LIMIT 20`}},
		{analystNames[1], "/v1/mcps/" + mcp + "/sessions/" + url.PathEscape(session), []string{
			`SELECT count(), sum(is_error), min(ts), max(ts) FROM ` + events + ` WHERE mcp_id = ` + quote(mcp) + ` AND session_id = ` + quote(session),
			`SELECT ts, ts_ms, ` + clickhouse.EventID + `, method, name, is_error, error_type, error_message, duration_ms, attr_keys, attr_values
			FROM ` + events + ` WHERE mcp_id = ` + quote(mcp) + ` AND session_id = ` + quote(session) + ` ORDER BY ts, ts_ms LIMIT 101`}},
		{analystNames[2], "/v1/mcps/" + mcp + "/overview?" + q(fortnight, "&granularity=hour"), []string{
			`SELECT toStartOfHour(ts) AS hour, count(), sum(is_error), uniq(session_id), uniq(user_key), ` + latency + `
			FROM ` + events + ` WHERE mcp_id = ` + quote(mcp) + ` AND ts >= ` + timeLit(fortnight) + ` AND ts < ` + timeLit(end) + `
			GROUP BY hour WITH TOTALS ORDER BY hour`}},
	}, nil
}
