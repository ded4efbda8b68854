package analytics

import (
	"context"
	"time"
)

// SLIQuery asks for the counts of one service level indicator: the items
// of an MCP (Tool "") or of one tool's tools/call items, bad when they
// failed with one of ErrorKinds (availability; see SLIReader for what
// counts until the rollups carry error_kind) or, with ThresholdMs > 0,
// when they took longer than that (latency).
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
// included).
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
