package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/clickhouse"
)

// runReady measures restart to ready: the time from the service's start
// (-since, Unix seconds) until an ingest payload is answered 202, with the
// number of item ids of the last 24 hours in ClickHouse (what the duplicate
// filter holds) beside it, and the time until that payload's item is in
// ClickHouse (the flusher has started).
func runReady(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench ready", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:38080", "service base URL")
	keys := fs.String("keys", "", "ingest keys, comma-separated (the first is used)")
	since := fs.String("since", "", "when the service was started, Unix seconds (date +%s.%N)")
	chAddr := fs.String("clickhouse", "", "ClickHouse address, to count the ids of the last 24 hours")
	database := fs.String("database", "telemetry", "the service's ClickHouse database")
	outPath := fs.String("out", "", "results file (JSON lines)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	startedF, err := strconv.ParseFloat(*since, 64)
	if err != nil {
		return fmt.Errorf("-since: %w", err)
	}
	started := time.Unix(0, int64(startedF*1e9))
	key := strings.Split(*keys, ",")[0]
	var readyAfter time.Duration
	var readyID string
	for attempt := 0; ; attempt++ {
		readyID = fmt.Sprintf("ready-%d-%d", time.Now().UnixNano(), attempt)
		body := fmt.Sprintf(`{"items":[{"id":%q,"timestamp":%q,"session_id":"ready","method":"ping"}]}`,
			readyID, time.Now().UTC().Format(time.RFC3339Nano))
		req, _ := http.NewRequestWithContext(ctx, "POST", *endpoint+"/v1/ingest", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusAccepted {
				readyAfter = time.Since(started)
				break
			}
		}
		if time.Since(started) > 5*time.Minute {
			return fmt.Errorf("no 202 within 5 minutes of the start")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	figs := []figure{{Section: "edges", Name: "restart to ready", Metric: "s", Value: readyAfter.Seconds()}}
	if *chAddr == "" {
		fmt.Fprintf(out, "restart to ready (first 202): %.2f s\n", readyAfter.Seconds())
		return recorder{*outPath}.record(figs...)
	}
	conn, err := openCH(ctx, *chAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	var ids uint64
	q := fmt.Sprintf("SELECT count() FROM %s.events WHERE received_at >= now() - 86400 AND %s != ''", *database, clickhouse.EventID)
	if err := conn.QueryRow(ctx, q).Scan(&ids); err != nil {
		return err
	}
	stored, err := untilStored(ctx, conn, *database, readyID, started)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "restart to ready (first 202): %.2f s, with %d item ids of the last 24 hours in ClickHouse; that item stored %.2f s after the start\n",
		readyAfter.Seconds(), ids, stored.Seconds())
	figs = append(figs, figure{Section: "edges", Name: "restart to ready", Metric: "ids_24h", Value: float64(ids)},
		figure{Section: "edges", Name: "restart to ready", Metric: "stored_s", Value: stored.Seconds()})
	return recorder{*outPath}.record(figs...)
}

// untilStored waits until the item id is in events and returns the time
// since started: the flusher runs only once the duplicate filter has
// loaded the stored ids, and a rate measured before then would leave
// ClickHouse idle (the in-memory dedup figure that follows "ready").
func untilStored(ctx context.Context, conn driver.Conn, database, id string, started time.Time) (time.Duration, error) {
	q := fmt.Sprintf("SELECT count() FROM %s.events WHERE session_id = 'ready' AND %s = ?", database, clickhouse.EventID)
	for {
		var n uint64
		if err := conn.QueryRow(ctx, q, id).Scan(&n); err != nil {
			return 0, err
		}
		if n > 0 {
			return time.Since(started), nil
		}
		if time.Since(started) > 5*time.Minute {
			return 0, fmt.Errorf("item %s not in ClickHouse within 5 minutes of the start", id)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
