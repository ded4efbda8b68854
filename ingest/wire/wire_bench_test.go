package wire

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchBodyOf is a batch of n items; with failure, each item carries
// response_bytes and args_hash as the SDKs send them (issue 39), and one
// in 33 is an error without error_kind (derived by the service).
func benchBodyOf(n int, failure bool) []byte {
	items := make([]map[string]any, n)
	now := time.Now().UTC()
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("6f1c2a9e-%08d-4b1c-9d3e-1234567890ab", i), "timestamp": now.Format(time.RFC3339Nano),
			"session_id": "s-81", "method": "tools/call", "name": "search_docs", "duration_ms": 182.5, "status": "ok",
			"client_name": "claude-desktop", "client_version": "0.9.1", "server_version": "1.4.0", "user_id": "u-42",
			"attributes": map[string]string{"region": "eu"}}
		if failure {
			items[i]["response_bytes"], items[i]["args_hash"] = 2048+i, fmt.Sprintf("%032x", i%48)
			if i%33 == 0 {
				items[i]["status"], items[i]["error_type"], items[i]["error_message"] = "error", "TimeoutError", "upstream timed out after 30s"
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"items": items})
	return b
}

// BenchmarkParseBatch measures decoding and validating a 500-item batch,
// the ingest path's main CPU cost per request.
// Its sub-benchmark "failure fields" has the issue 39 fields in every item:
// the difference is their cost (docs/benchmarks.md).
func BenchmarkParseBatch(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchParse(b, benchBodyOf(500, false)) })
	b.Run("failure fields", func(b *testing.B) { benchParse(b, benchBodyOf(500, true)) })
}

func benchParse(b *testing.B, body []byte) {
	now := time.Now()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseBatch(body, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*500)/b.Elapsed().Seconds(), "items/s")
}
