package ingest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpscope/telemetry/wal"
)

// TestSyncHistogramIsTheLogs: telemetry_wal_sync_duration_seconds shows
// the log's fsync durations as a cumulative histogram.
func TestSyncHistogramIsTheLogs(t *testing.T) {
	var st wal.Stats
	st.SyncTime.Buckets[0] = 5                      // at most SyncBounds[0]
	st.SyncTime.Buckets[len(wal.SyncBounds)-1] = 2  // at most the last bound
	st.SyncTime.Over, st.SyncTime.Seconds = 1, 3.25 // one longer
	reg := prometheus.NewRegistry()
	NewMetrics(reg, func() wal.Stats { return st })
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "telemetry_wal_sync_duration_seconds" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 8 || h.GetSampleSum() != 3.25 {
			t.Fatalf("count %d sum %v, want 8 and 3.25", h.GetSampleCount(), h.GetSampleSum())
		}
		b := h.GetBucket()
		if len(b) != len(wal.SyncBounds) || b[0].GetCumulativeCount() != 5 || b[1].GetCumulativeCount() != 5 ||
			b[len(b)-1].GetCumulativeCount() != 7 || b[len(b)-1].GetUpperBound() != wal.SyncBounds[len(wal.SyncBounds)-1] {
			t.Fatalf("buckets %v", b)
		}
		return
	}
	t.Fatal("no telemetry_wal_sync_duration_seconds")
}
