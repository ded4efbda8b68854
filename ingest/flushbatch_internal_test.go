package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/wal"
)

// TestBatchDueByBytes: records of large items make a batch due by their
// bytes long before FlushMaxRows rows, so a backlog of them is never read
// into memory whole.
func TestBatchDueByBytes(t *testing.T) {
	p := &Flusher{core: &core{opts: Options{FlushMaxRows: 50_000, FlushInterval: time.Hour}}}
	attrs := map[string]string{}
	for i := 0; i < analytics.MaxAttributes; i++ {
		attrs[strings.Repeat("k", 8)+string(rune('a'+i))] = strings.Repeat("é", analytics.MaxAttributeValue)
	}
	it := analytics.Item{ID: "x", Timestamp: time.Now(), SessionID: "s", Method: "tools/call", Name: "t", Attributes: attrs}
	data := Record{AccountID: "acc", MCPID: "mcp", ReceivedAt: time.Now(), Items: []analytics.Item{it, it, it}}.Encode(nil)
	var b flushBatch
	clock := new(flushClock)
	seq := uint64(0)
	for {
		if _, due := p.batchDue(&b, clock); due {
			break
		}
		seq++
		p.collect(&b, wal.Record{Seq: seq, Data: data}, 0)
		if len(b.rows) >= p.opts.FlushMaxRows {
			t.Fatalf("due only at FlushMaxRows (%d rows, %d bytes)", len(b.rows), b.bytes)
		}
	}
	if b.bytes < flushMaxBytes || b.bytes > flushMaxBytes+len(data) {
		t.Fatalf("due at %d bytes, want %d to %d", b.bytes, flushMaxBytes, flushMaxBytes+len(data))
	}
	t.Logf("due at %d rows, %d bytes (records of %d bytes)", len(b.rows), b.bytes, len(data))
	b.reset()
	if b.bytes != 0 || len(b.rows) != 0 {
		t.Fatalf("reset left %d bytes, %d rows", b.bytes, len(b.rows))
	}
}
