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
)

// runReady measures restart to ready: the time from the service's start
// (-since, Unix seconds) until an ingest payload is answered 202, with the
// number of item ids of the last 24 hours in ClickHouse (what the duplicate
// filter holds) beside it.
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
	for attempt := 0; ; attempt++ {
		body := fmt.Sprintf(`{"items":[{"id":"ready-%d-%d","timestamp":%q,"session_id":"ready","method":"ping"}]}`,
			time.Now().UnixNano(), attempt, time.Now().UTC().Format(time.RFC3339Nano))
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
	var ids uint64
	if *chAddr != "" {
		conn, err := openCH(ctx, *chAddr)
		if err != nil {
			return err
		}
		defer conn.Close()
		q := fmt.Sprintf("SELECT count() FROM %s.events WHERE received_at >= now() - 86400 AND id != ''", *database)
		if err := conn.QueryRow(ctx, q).Scan(&ids); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "restart to ready (first 202): %.2f s, with %d item ids of the last 24 hours in ClickHouse\n",
		readyAfter.Seconds(), ids)
	return recorder{*outPath}.record(
		figure{Section: "edges", Name: "restart to ready", Metric: "s", Value: readyAfter.Seconds()},
		figure{Section: "edges", Name: "restart to ready", Metric: "ids_24h", Value: float64(ids)},
	)
}
