package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/ingest/wire"
	"github.com/mcpscope/telemetry/wal"
)

// BenchmarkAcceptPath is the service's accept path per request as the
// ingest handler runs it, for a gzip body of 500 items as the SDKs send
// them: inflate and count (decodeBody), decode and validate (wire), then
// Acceptor.Accept (cut, duplicate filter, log record, append to a real
// write-ahead log with its fsync). The flusher runs beside it into a sink
// that keeps nothing, so its gather is in the CPU too, not ClickHouse's
// insert. Compare CPU time per item (docs/benchmarks.md, goal 1), not the
// wall time, which is mostly fsync.
func BenchmarkAcceptPath(b *testing.B) {
	const n = 500
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := wal.Open(b.TempDir(), wal.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	p := ingest.New(l, discardSink{}, ingest.Options{Node: "bench", DedupWindow: 24 * time.Hour,
		FlushInterval: 100 * time.Millisecond, FlushMaxRows: 50_000, Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done; l.Close() }()
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = acceptBenchBody(i, n)
	}
	mcps := make([]string, 1024) // a body again goes to another MCP: no duplicates
	for i := range mcps {
		mcps[i] = fmt.Sprintf("mcp-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		raw := bodies[i%len(bodies)]
		body, release, err := decodeBody(raw, "gzip", analytics.MaxBodyBytes, wire.CheckItemCount)
		if err != nil {
			b.Fatal(err)
		}
		batch, err := wire.ParseCountedBatch(body, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		accepted, _, err := p.Acceptor.Accept(ctx, ingest.Payload{AccountID: "acc", MCPID: mcps[i/len(bodies)%len(mcps)], Items: batch.Items, BodyBytes: len(body)})
		release()
		if err != nil || accepted != n {
			b.Fatalf("accepted %d of %d: %v", accepted, n, err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "items/s")
}

// acceptBenchBody is the gzip body of request r: n items with the fields
// the SDKs send, unique ids.
func acceptBenchBody(r, n int) []byte {
	items := make([]analytics.Item, n)
	now := time.Now().UTC()
	for i := range items {
		d, rb := 182.5, int64(2048+i)
		items[i] = analytics.Item{ID: fmt.Sprintf("6f1c2a9e-%08d-%08d", r, i), Timestamp: now, SessionID: "s-81",
			Method: "tools/call", Name: "search_docs", DurationMs: &d, Status: analytics.StatusOK,
			ClientName: "claude-desktop", ClientVersion: "0.9.1", ServerVersion: "1.4.0", UserID: "u-42",
			Attributes: map[string]string{"region": "eu"}, ResponseBytes: &rb, ArgsHash: fmt.Sprintf("%032x", i%48)}
	}
	js, _ := json.Marshal(map[string]any{"items": items})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(js)
	_ = zw.Close()
	return buf.Bytes()
}

// discardSink keeps nothing: the flusher's side of the benchmark without
// ClickHouse's.
type discardSink struct{}

func (discardSink) InsertBatch(context.Context, string, []analytics.StoredRow) error { return nil }
func (discardSink) InsertedSeqs(context.Context, string, uint64, uint64, time.Time, time.Time) (map[analytics.RecordDay]bool, error) {
	return nil, nil
}
func (discardSink) CompleteViews(context.Context, string, uint64, uint64, time.Time, time.Time) (int, error) {
	return 0, nil
}
func (discardSink) RecentIDs(context.Context, time.Time, func(string, string, time.Time)) error {
	return nil
}
func (discardSink) StoredIDs(context.Context, time.Time, map[string][]string, func(string, string, time.Time)) error {
	return nil
}
