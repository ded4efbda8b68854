package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// BenchmarkSLICounts measures the SLO pass's indicator reads alone, for
// 10,000 SLOs on 1,000 MCPs (half on a tool, a tenth latency), in one chunk
// of 10,000 as the pass reads them: "minutes" the events statement of the
// short burn windows, "hours" the rollup statement of the 3-day and
// 28-day windows, "both" the two side by side (what the pass does).
// Each MCP has 200 items in the last 22 hours and 60 over 28 days.
func BenchmarkSLICounts(b *testing.B) {
	db := openDB(b, false)
	ctx := context.Background()
	to := time.Now().UTC().Truncate(24 * time.Hour).Add(-2 * time.Hour)
	var rows []analytics.StoredRow
	var qs []analytics.SLIQuery
	dur := 120.0
	for m := range 1000 {
		mcp := fmt.Sprintf("mcp_%04d", m)
		for k := range 260 {
			at := to.Add(-time.Duration(k) * 6 * time.Minute)
			if k >= 200 {
				at = to.Add(-time.Duration(k-200) * 11 * time.Hour)
			}
			it := analytics.Item{ID: fmt.Sprintf("%s-%d", mcp, k), Timestamp: at, SessionID: "s", Method: "tools/call",
				Name: fmt.Sprintf("tool%d", k%5), Status: analytics.StatusOK, DurationMs: &dur}
			if k%50 == 0 {
				it.Status, it.ErrorKind = analytics.StatusError, analytics.ErrorKindToolError
			}
			rows = append(rows, analytics.StoredRow{AccountID: "acc", MCPID: mcp, Node: "bench", Seq: uint64(m), // a record per MCP
				ReceivedAt: at, Item: it})
		}
		for k := range 10 {
			q := analytics.SLIQuery{MCPID: mcp, ErrorKinds: []string{"tool_error", "exception"}, WindowDays: 28}
			if k%2 == 0 {
				q.Tool = "tool0"
			}
			if k == 9 {
				q.ErrorKinds, q.ThresholdMs = nil, 500
			}
			qs = append(qs, q)
		}
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		b.Fatal(err)
	}
	noWindow := make([]analytics.SLIQuery, len(qs))
	for i, q := range qs {
		q.WindowDays = 0
		noWindow[i] = q
	}
	run := func(name string, minutes, hours []int, qs []analytics.SLIQuery) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for start := 0; start < len(qs); start += 10000 {
					if _, err := db.SLICounts(ctx, to, minutes, hours, qs[start:start+10000]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	run("minutes", []int{5, 30, 60, 360}, nil, noWindow)
	run("hours", nil, []int{72}, qs)
	run("both", []int{5, 30, 60, 360}, []int{72}, qs)
}
