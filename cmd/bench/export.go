package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// runExport times GET /v1/mcps/{id}/export streamed to a client on the
// same machine: rows (lines) per second, bytes per second, and the
// service's peak RSS during the stream; the row count is checked against
// the events table.
func runExport(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench export", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "http://127.0.0.1:8080", "service base address")
	token := fs.String("token", "", "session token of the account owning -mcp")
	mcp := fs.String("mcp", "", "id of the MCP to export")
	addr := fs.String("clickhouse", "", "ClickHouse native address, to check the row count (empty: no check)")
	db := fs.String("database", "telemetry", "the service's ClickHouse database")
	days := fs.Int("days", 365, "days exported, ending today")
	pid := fs.Int("pid", 0, "the service's process id, for its peak RSS")
	outPath := fs.String("out", "", "append the figures to this results file")
	big := fs.Bool("big-attribute", false, "first store (straight into -clickhouse) an item with a 512 KiB attribute at the start of the range, "+
		"the first row of the export's first block, then export as ndjson only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" || *mcp == "" {
		return errors.New("-token and -mcp are required")
	}
	today := analytics.UTCDay(time.Now())
	from := today.AddDate(0, 0, -(*days - 1))
	formats, suffix := []string{"ndjson", "csv"}, ""
	if *big {
		if *addr == "" {
			return errors.New("-big-attribute needs -clickhouse")
		}
		if err := storeBigItem(ctx, *addr, *db, *mcp, from); err != nil {
			return err
		}
		formats, suffix = []string{"ndjson"}, ", 512 KiB attribute"
	}
	var figs []figure
	for _, format := range formats {
		q := url.Values{"from": {from.Format(analytics.DateLayout)}, "to": {today.Format(analytics.DateLayout)}, "format": {format}}
		req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(*endpoint, "/")+"/v1/mcps/"+*mcp+"/export?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+*token)
		sctx, stop := context.WithCancel(ctx)
		rss := startRSSSampler(sctx, *pid)
		t0 := time.Now()
		lines, bytesRead, err := readExport(req, format)
		elapsed := time.Since(t0)
		stop()
		if err != nil {
			return err
		}
		peak := rss.wait() / 1024
		rows := lines
		if format == "csv" {
			rows-- // the header line (a CSV value may hold newlines; the bench's do not)
		}
		if rows <= 0 {
			return fmt.Errorf("export %s: the MCP holds no items in the range; the reads part seeds them (leave reads out of BENCH_SKIP)", format)
		}
		rate := float64(rows) / elapsed.Seconds()
		fmt.Fprintf(out, "export %-6s%s %d days: %d rows, %.0f MiB in %.1f s: %.0f rows/s, %.0f MiB/s; service peak RSS %.0f MiB\n",
			format, suffix, *days, rows, float64(bytesRead)/(1<<20), elapsed.Seconds(), rate, float64(bytesRead)/(1<<20)/elapsed.Seconds(), peak)
		name := "export " + format + suffix
		figs = append(figs, figure{"export", name, "rows", float64(rows)}, figure{"export", name, "rows_per_s", rate},
			figure{"export", name, "mib_per_s", float64(bytesRead) / (1 << 20) / elapsed.Seconds()}, figure{"export", name, "rss_mib", peak})
		if *addr != "" {
			n, err := countEvents(ctx, *addr, *db, *mcp, from, today.AddDate(0, 0, 1))
			if err != nil {
				return err
			}
			if uint64(rows) != n {
				return fmt.Errorf("export %s streamed %d rows, the events table holds %d", format, rows, n)
			}
		}
	}
	return recorder{*outPath}.record(figs...)
}

// storeBigItem stores straight into ClickHouse an item of the MCP mcp at
// from with a 512 KiB attribute.
func storeBigItem(ctx context.Context, addr, db, mcp string, from time.Time) error {
	store, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{addr}, Database: db})
	if err != nil {
		return err
	}
	err = store.Sink.InsertRows(ctx, []analytics.StoredRow{{AccountID: "bench", MCPID: mcp, Node: "bench", ReceivedAt: time.Now().UTC(),
		Item: analytics.Item{ID: fmt.Sprintf("big-%d", time.Now().UnixNano()), Timestamp: from, SessionID: "big", Method: "tools/call",
			Name: "big", Status: analytics.StatusOK, Attributes: map[string]string{"big": strings.Repeat("x", 512<<10)}}}})
	store.Close()
	return err
}

// readExport sends the export request req and reads its answer to the
// end, counting its lines and bytes.
func readExport(req *http.Request, format string) (lines, bytesRead int64, err error) {
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		return 0, 0, fmt.Errorf("export: %d %s", res.StatusCode, b)
	}
	buf := make([]byte, 256<<10)
	br := bufio.NewReaderSize(res.Body, 256<<10)
	for {
		n, err := br.Read(buf)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		bytesRead += int64(n)
		if err == io.EOF {
			return lines, bytesRead, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("export %s: after %d bytes: %w", format, bytesRead, err)
		}
	}
}

// countEvents counts the events of the MCP mcp in [from, to).
func countEvents(ctx context.Context, addr, db, mcp string, from, to time.Time) (uint64, error) {
	conn, err := openCH(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var n uint64
	q := "SELECT count() FROM " + db + ".events WHERE mcp_id = ? AND ts >= " + timeLit(from) + " AND ts < " + timeLit(to)
	err = conn.QueryRow(ctx, q, mcp).Scan(&n)
	return n, err
}
