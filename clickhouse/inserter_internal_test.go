package clickhouse

import (
	"fmt"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse/native"
)

// BenchmarkEncodeBlock measures the client's side of an insert without a
// server: a flush of 50,000 rows (records of 500 items) with their
// markers, built into the block and encoded as Insert sends it.
func BenchmarkEncodeBlock(b *testing.B) {
	const n = 50_000
	now := time.Now().UTC()
	rows := make([]analytics.StoredRow, n)
	for i := range rows {
		dur := float64(i % 500)
		it := analytics.Item{ID: fmt.Sprint("id-", i), Timestamp: now.Add(-time.Duration(i) * time.Millisecond),
			SessionID: fmt.Sprint("s-", i/20), Method: analytics.MethodToolsCall, Name: fmt.Sprint("tool-", i%12),
			Status: analytics.StatusOK, DurationMs: &dur, ClientName: "claude-desktop", ClientVersion: fmt.Sprint("0.9.", i%7),
			ServerVersion: "1.2.0", ProtocolVersion: "2025-06-18", UserID: fmt.Sprint("u-", i%5000)}
		if i%3 == 0 {
			it.Attributes = map[string]string{"region": fmt.Sprint("r", i%4)}
		}
		rows[i] = analytics.StoredRow{AccountID: "acct", MCPID: "mcp", Node: "node", Seq: uint64(1 + i/500),
			ReceivedAt: now, Item: it}
	}
	blk := newEventBlock()
	var buf chproto.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		markers := markerRows(rows, 1)
		for i := range rows {
			blk.add(&rows[i])
		}
		for i := range markers {
			blk.add(&markers[i])
		}
		buf.Reset()
		block := chproto.Block{Columns: len(blk.input), Rows: blk.rows}
		if err := block.EncodeBlock(&buf, native.Revision, blk.input); err != nil {
			b.Fatal(err)
		}
		blk.reset()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
