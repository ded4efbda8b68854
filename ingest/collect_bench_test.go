package ingest

import (
	"strconv"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/wal"
)

// BenchmarkCollect decodes records of 500 items into a flush batch, as
// the flusher does with the log (gather): per item, the decoding of its
// record and its row.
func BenchmarkCollect(b *testing.B) {
	now := time.Now().UTC()
	items := make([]analytics.Item, 500)
	for i := range items {
		d := float64(i)
		items[i] = analytics.Item{ID: "item-" + strconv.Itoa(i), Timestamp: now, SessionID: "session-1", Method: "tools/call",
			Name: "search", DurationMs: &d, Status: analytics.StatusOK, ClientName: "claude", ClientVersion: "1.2.3",
			ServerVersion: "0.9.0", ProtocolVersion: "2025-06-18", UserID: "user-" + strconv.Itoa(i%50),
			Attributes: map[string]string{"region": "eu", "tier": "pro"}}
	}
	data := Record{AccountID: "acc", MCPID: "mcp", ReceivedAt: now, Items: items}.Encode(nil)
	f := &Flusher{core: &core{opts: Options{FlushMaxRows: 50_000, FlushInterval: time.Hour}, node: "n"}}
	var batch flushBatch
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if len(batch.rows) >= 50_000 {
			batch.reset()
		}
		f.collect(&batch, wal.Record{Seq: uint64(i + 1), Data: data}, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
}
