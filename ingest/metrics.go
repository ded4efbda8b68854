package ingest

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpscope/telemetry/wal"
)

// Metrics are the ingest path's Prometheus metrics. A nil *Metrics records
// nothing, so tests need not build one.
type Metrics struct {
	items       *prometheus.CounterVec
	walFull     prometheus.Counter
	batchRows   prometheus.Histogram
	flushTime   prometheus.Histogram
	flushErrors prometheus.Counter
	flushDups   prometheus.Counter
	viewsFixed  prometheus.Counter
}

// NewMetrics registers the ingest metrics on reg, with gauges that read the
// log's backlog at scrape time.
func NewMetrics(reg prometheus.Registerer, stats func() wal.Stats) *Metrics {
	m := &Metrics{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "telemetry_ingest_items_total", Help: "Ingested items by outcome (accepted, dropped).",
		}, []string{"outcome"}),
		walFull: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_ingest_wal_full_total", Help: "Payloads refused with 503 because the write-ahead log hit its disk budget.",
		}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "telemetry_flush_batch_rows", Help: "Rows per ClickHouse insert.",
			Buckets: prometheus.ExponentialBuckets(10, 4, 8),
		}),
		flushTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "telemetry_flush_duration_seconds", Help: "Time of one ClickHouse insert.",
			Buckets: prometheus.DefBuckets,
		}),
		flushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_flush_failures_total", Help: "Failed ClickHouse inserts or lookups (retried).",
		}),
		flushDups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_flush_duplicates_total",
			Help: "Items left out at flush as duplicates: ClickHouse already held their id (accepted while the duplicate filter was loading, or said maybe), or, with shared dedup, another record owns it.",
		}),
		viewsFixed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_flush_views_completed_total",
			Help: "Rollups completed after an insert cut short had reached the raw table and not them (one per insert and rollup).",
		}),
	}
	reg.MustRegister(m.items, m.walFull, m.batchRows, m.flushTime, m.flushErrors, m.flushDups, m.viewsFixed,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "telemetry_wal_backlog_bytes", Help: "Unflushed bytes in the write-ahead log."},
			func() float64 { return float64(stats().UnackedBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "telemetry_wal_write_failures_total", Help: "Write-ahead-log commit rounds whose write or fsync failed (their payloads were answered 503)."},
			func() float64 { return float64(stats().WriteFailures) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "telemetry_wal_lost_records_total", Help: "Write-ahead-log records found destroyed by damage on disk at start (every valid record after them is kept; see telemetryd wal verify)."},
			func() float64 { return float64(stats().LostRecords) }),
		syncHistogram{stats},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "telemetry_wal_backlog_records", Help: "Unflushed payloads in the write-ahead log."},
			func() float64 { return float64(stats().UnackedRecords) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "telemetry_wal_oldest_unflushed_age_seconds", Help: "Age of the oldest unflushed payload (0 when none)."},
			func() float64 {
				s := stats()
				if s.UnackedRecords == 0 || s.OldestUnacked.IsZero() {
					return 0
				}
				return time.Since(s.OldestUnacked).Seconds()
			}),
	)
	return m
}

var syncDesc = prometheus.NewDesc("telemetry_wal_sync_duration_seconds",
	"Time of the write-ahead log's data fsyncs: what every acknowledged payload waits for the disk (group commit).", nil, nil)

// syncHistogram exports the log's fsync durations (wal.Stats.SyncTime),
// read at scrape time.
type syncHistogram struct{ stats func() wal.Stats }

func (h syncHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- syncDesc }

func (h syncHistogram) Collect(ch chan<- prometheus.Metric) {
	st := h.stats()
	t := st.SyncTime
	buckets := make(map[float64]uint64, len(wal.SyncBounds))
	var n uint64
	for i, b := range wal.SyncBounds {
		n += uint64(t.Buckets[i])
		buckets[b] = n
	}
	ch <- prometheus.MustNewConstHistogram(syncDesc, n+uint64(t.Over), t.Seconds, buckets)
}

// RegisterDedupMetrics registers gauges of the duplicate filter's size
// (Pipeline.DedupStats), read at scrape time.
func RegisterDedupMetrics(reg prometheus.Registerer, stats func() DedupStats) {
	gauge := func(name, help string, v func(DedupStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	reg.MustRegister(
		gauge("telemetry_dedup_exact_ids", "Item ids the duplicate filter keeps exactly.", func(s DedupStats) float64 { return float64(s.ExactIDs) }),
		gauge("telemetry_dedup_exact_bytes", "Bytes of the duplicate filter's exact table.", func(s DedupStats) float64 { return float64(s.ExactBytes) }),
		gauge("telemetry_dedup_filter_ids", "Item ids handed from the exact table to the fixed-size filter (within the window).", func(s DedupStats) float64 { return float64(s.FilterIDs) }),
		gauge("telemetry_dedup_filter_bytes", "Bytes of the fixed-size filter's segments.", func(s DedupStats) float64 { return float64(s.FilterBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "telemetry_dedup_unverified_total",
			Help: "Item ids accepted while the fixed-size filter said maybe (checked against ClickHouse at flush)."},
			func() float64 { return float64(stats().Unverified) }),
	)
}

func (m *Metrics) accepted(accepted, dropped int) {
	if m == nil {
		return
	}
	m.items.WithLabelValues("accepted").Add(float64(accepted))
	m.items.WithLabelValues("dropped").Add(float64(dropped))
}

func (m *Metrics) full() {
	if m != nil {
		m.walFull.Inc()
	}
}

func (m *Metrics) flushed(rows int, d time.Duration) {
	if m != nil {
		m.batchRows.Observe(float64(rows))
		m.flushTime.Observe(d.Seconds())
	}
}

func (m *Metrics) flushFailed() {
	if m != nil {
		m.flushErrors.Inc()
	}
}

func (m *Metrics) duplicatesAtFlush(n int) {
	if m != nil {
		m.flushDups.Add(float64(n))
	}
}

func (m *Metrics) viewsCompleted(n int) {
	if m != nil {
		m.viewsFixed.Add(float64(n))
	}
}
