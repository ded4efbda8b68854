package main

import (
	"math"
	"strings"
	"testing"
)

const metricsBefore = `# TYPE telemetry_http_request_duration_seconds histogram
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="0.01"} 2
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="0.05"} 2
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="0.1"} 2
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="+Inf"} 2
telemetry_http_request_duration_seconds_sum{method="POST",route="/v1/ingest"} 0.01
telemetry_http_request_duration_seconds_count{method="POST",route="/v1/ingest"} 2
telemetry_http_request_duration_seconds_bucket{method="GET",route="/health",le="0.01"} 0
telemetry_http_request_duration_seconds_bucket{method="GET",route="/health",le="0.05"} 0
telemetry_http_request_duration_seconds_bucket{method="GET",route="/health",le="0.1"} 0
telemetry_http_request_duration_seconds_bucket{method="GET",route="/health",le="+Inf"} 100
telemetry_http_request_duration_seconds_sum{method="GET",route="/health"} 900
telemetry_http_request_duration_seconds_count{method="GET",route="/health"} 100
`

// after: 10 more ingest requests, 5 of at most 10 ms, 4 of 10-50 ms, 1 of
// 50-100 ms; and 4 fsyncs.
const metricsAfter = `# TYPE telemetry_http_request_duration_seconds histogram
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="0.01"} 7
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="0.05"} 11
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="0.1"} 12
telemetry_http_request_duration_seconds_bucket{method="POST",route="/v1/ingest",le="+Inf"} 12
telemetry_http_request_duration_seconds_sum{method="POST",route="/v1/ingest"} 0.3
telemetry_http_request_duration_seconds_count{method="POST",route="/v1/ingest"} 12
# TYPE telemetry_wal_sync_duration_seconds histogram
telemetry_wal_sync_duration_seconds_bucket{le="0.001"} 3
telemetry_wal_sync_duration_seconds_bucket{le="0.01"} 4
telemetry_wal_sync_duration_seconds_bucket{le="+Inf"} 4
telemetry_wal_sync_duration_seconds_sum 0.008
telemetry_wal_sync_duration_seconds_count 4
`

// TestServerViewQuantiles: the quantiles are those of what the histograms
// counted between the snapshots (the ingest route's alone), interpolated
// within their bucket.
func TestServerViewQuantiles(t *testing.T) {
	before, after := parseServerView(strings.NewReader(metricsBefore)), parseServerView(strings.NewReader(metricsAfter))
	if before.request == nil || after.request == nil || after.sync == nil || before.sync != nil {
		t.Fatalf("parsed %+v and %+v", before, after)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("p50", histQuantile(before.request, after.request, 0.5), 0.01)   // rank 5: the end of the first bucket
	near("p99", histQuantile(before.request, after.request, 0.99), 0.095) // rank 9.9: 90% into 50-100 ms
	near("p70", histQuantile(before.request, after.request, 0.7), 0.03)   // rank 7: half into 10-50 ms
	near("fsync p50", histQuantile(before.sync, after.sync, 0.5), 0.001*2/3)
	if q := histQuantile(after.request, after.request, 0.99); !math.IsNaN(q) {
		t.Errorf("nothing counted: %v, want NaN", q)
	}
}
