package analytics

import "time"

// Overview is the headline view of one MCP over a range
// (GET /v1/mcps/{id}/overview). Calls count every item of any method;
// latencies cover the items of any method that carry duration_ms and are
// null when none does.
type Overview struct {
	MCPID string `json:"mcp_id"`
	From  string `json:"from"`
	To    string `json:"to"`
	OverviewFigures
	// Series has one entry per day of the range (per hour with
	// granularity=hour), oldest first, zero-filled.
	Series []OverviewDay `json:"series"`
	// Releases marks the releases first seen in the range, oldest first,
	// to draw on the series.
	Releases []ReleaseMarker `json:"releases"`
	// Nightly holds the figures of the last nightly pass, and NightlyAsOf
	// the last day they cover (null, with null figures, before the first).
	Nightly     Nightly `json:"nightly"`
	NightlyAsOf *string `json:"nightly_as_of"`
	// ErrorKinds counts the range's errors by kind, any method, most
	// frequent first.
	ErrorKinds []ErrorKindCount `json:"error_kinds"`
	// RepeatedCalls counts the tool calls that repeated their session's
	// previous call (RepeatOf); null when the range holds more than
	// MaxRawFailureEvents events.
	RepeatedCalls *int64 `json:"repeated_calls"`
	// UnknownToolCalls counts the calls of the unknown-tools read over the
	// range (UnknownToolReport); null when the range holds more than
	// MaxRawFailureEvents events.
	UnknownToolCalls *int64 `json:"unknown_tool_calls"`
	// Previous, with compare=previous, holds the same headline figures
	// over the same number of days just before From.
	Previous *OverviewPrevious `json:"previous,omitempty"`
}

// OverviewFigures are the overview's headline figures over a range.
type OverviewFigures struct {
	CallCounts
	// Sessions counts distinct session ids with an item in the range:
	// exact up to 16, an estimate (about 1.6% typical error) beyond.
	Sessions int64 `json:"sessions"`
	// Users counts distinct user ids, a session without one counting as a
	// user of its own; exact up to 16, an estimate beyond, as Sessions.
	Users int64 `json:"users"`
	Latencies
	P99Ms *float64 `json:"p99_ms"`
}

// OverviewPrevious is the overview's headline figures over the previous
// period (compare=previous).
type OverviewPrevious struct {
	From string `json:"from"`
	To   string `json:"to"`
	OverviewFigures
}

// OverviewDay is one day (or hour) of an overview series; its distinct
// counts are within that bucket. Date is the bucket's UTC day, Start its
// first instant.
type OverviewDay struct {
	Date     string    `json:"date"`
	Start    time.Time `json:"start"`
	Calls    int64     `json:"calls"`
	Errors   int64     `json:"errors"`
	Sessions int64     `json:"sessions"`
	Users    int64     `json:"users"`
	P95Ms    *float64  `json:"p95_ms"`
}
