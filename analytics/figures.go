package analytics

// The figure sets of the metric reads (overview, tools, a tool, breakdown,
// insights, and each one's previous period) are built from these parts,
// embedded so that their JSON stays flat ("calls", "errors", ...) and each
// field is declared once. Their order inside a set is part of the wire
// form: embedding keeps it.

// CallCounts are the counts every figure set starts with: items, error
// items and their ratio.
type CallCounts struct {
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// ErrorRate is Errors / Calls, 0 without calls.
	ErrorRate float64 `json:"error_rate"`
}

// Counts returns the counts of calls items of which errors failed.
func Counts(calls, errors int64) CallCounts {
	return CallCounts{Calls: calls, Errors: errors, ErrorRate: ErrorRate(errors, calls)}
}

// Latencies are the mean and median and 95th percentile of duration_ms
// over the items that carry it; each is null when none does.
type Latencies struct {
	AvgMs *float64 `json:"avg_ms"`
	P50Ms *float64 `json:"p50_ms"`
	P95Ms *float64 `json:"p95_ms"`
}
