package analytics

import (
	"context"
	"time"
)

// LatencyLadderMs are the thresholds a latency SLO may take, in
// milliseconds: the SLO rollups count, per MCP, tool and hour, the items
// that took at most each of them (clickhouse migration 012), so that a
// window's good items are a sum of rows, exact, whatever the window. A
// threshold between two rungs could only be estimated; the API refuses it
// and lists these.
var LatencyLadderMs = []float64{50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000}

// SLIQuery asks for the counts of one service level indicator: the items
// of an MCP (Tool "") or of one tool's tools/call items. Availability
// (ThresholdMs 0): every item counts, bad when it failed with one of
// ErrorKinds, or failed without a kind (items stored before error kinds
// existed). Latency (ThresholdMs one of LatencyLadderMs): the items with a
// duration count, bad when they took longer than ThresholdMs (errors
// included: a failure's latency is the agent's wait too).
type SLIQuery struct {
	MCPID       string
	Tool        string
	ThresholdMs float64
	ErrorKinds  []string
	// WindowDays is the SLO's window, read from the hourly rollups.
	WindowDays int
}

// SLICounts counts an indicator's items over a window.
type SLICounts struct {
	Total int64
	Bad   int64
}

// SLIReading is one query's counts: Minutes by window length in minutes
// (the short burn windows, read from events to the millisecond), Hours by
// window length in hours (the long burn window and the SLO's window, read
// from the hourly rollups as that many clock hours, the current one
// included; whole days from a daily rollup, the hours at either end from
// the hourly one).
type SLIReading struct {
	Minutes map[int]SLICounts
	Hours   map[int]SLICounts
}

// SLIPoint is one day of an indicator's series.
type SLIPoint struct {
	Day   time.Time `json:"day"`
	Total int64     `json:"total"`
	Bad   int64     `json:"bad"`
}

// SLIReader reads indicators for the SLO pass and the SLO reads, from
// rollups: never a scan of an SLO's whole window of events.
type SLIReader interface {
	// SLICounts answers each query (in order) for windows ending at to:
	// every length of minutes (at most 1440) and of hours.
	SLICounts(ctx context.Context, to time.Time, minutes, hours []int, qs []SLIQuery) ([]SLIReading, error)
	// SLISeries is the query's daily counts over its window ending at to,
	// oldest first, days without items included.
	SLISeries(ctx context.Context, to time.Time, q SLIQuery) ([]SLIPoint, error)
}
