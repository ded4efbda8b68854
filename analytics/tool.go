package analytics

import "time"

// ToolList is the tools of one MCP over a range (GET /v1/mcps/{id}/tools):
// tools/call items only, one entry per tool name that had a call, by calls
// descending then name.
type ToolList struct {
	From  string        `json:"from"`
	To    string        `json:"to"`
	Items []ToolSummary `json:"items"`
	// Previous, with compare=previous, names the period just before; each
	// item then carries its figures then.
	Previous *PreviousRange `json:"previous,omitempty"`
}

// ToolSummary is one tool's figures over a range. Latencies cover its calls
// that carry duration_ms and are null when none does.
type ToolSummary struct {
	Name string `json:"name"`
	ToolFigures
	// LastSeenAt is the time of the tool's last call within the range.
	LastSeenAt time.Time `json:"last_seen_at"`
	// ResponseSizes are the sizes of its answers (docs/failures.md).
	ResponseSizes
	// RepeatedCalls counts its calls that repeated the session's previous
	// call (RepeatOf); null when the range holds more than
	// MaxRawFailureEvents events.
	RepeatedCalls *int64 `json:"repeated_calls"`
	// Previous, with compare=previous, is the tool's figures over the
	// previous period (zeros when it had no call then).
	Previous *ToolFigures `json:"previous,omitempty"`
}

// ToolFigures are a tool's figures in the tool list, over the range or
// over the previous period.
type ToolFigures struct {
	CallCounts
	Latencies
	Sessions int64 `json:"sessions"`
}

// ToolDetail is one tool over a range (GET /v1/mcps/{id}/tools/{name}). A
// tool without data in the range has zero figures and empty lists, not a
// not-found error: tool names are free text that no registry defines.
type ToolDetail struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
	ToolHeadline
	// Series has one entry per day of the range (per hour with
	// granularity=hour), oldest first, zero-filled.
	Series []ToolDay `json:"series"`
	// Releases marks the MCP's releases first seen in the range, oldest
	// first, to draw on the series.
	Releases []ReleaseMarker `json:"releases"`
	// ErrorTypes lists the tool's errors by type, most frequent first; an
	// error item without error_type is counted under "".
	ErrorTypes []ErrorTypeCount `json:"error_types"`
	// Clients lists the tool's calls by client name, most calls first; items
	// without client_name are counted under "".
	Clients []ToolClient `json:"clients"`
	// ErrorKinds lists the tool's errors by kind, most frequent first
	// (errors stored before error kinds existed are not in it).
	ErrorKinds []ErrorKindCount `json:"error_kinds"`
	// ResponseSizes are the sizes of its answers.
	ResponseSizes
	// RepeatedCalls counts its calls that repeated the session's previous
	// call (RepeatOf); null when the range holds more than
	// MaxRawFailureEvents events.
	RepeatedCalls *int64 `json:"repeated_calls"`
	// Refusals are the most frequent messages of its invalid_params errors
	// (at most MaxRefusals), most frequent first.
	Refusals []Refusal `json:"refusals"`
	// Previous, with compare=previous, holds the headline figures over the
	// same number of days just before From.
	Previous *ToolPrevious `json:"previous,omitempty"`
}

// ToolHeadline is a tool's headline figures over a range.
type ToolHeadline struct {
	CallCounts
	Latencies
	P99Ms *float64 `json:"p99_ms"`
}

// ToolPrevious is a tool's headline figures over the previous period.
type ToolPrevious struct {
	From string `json:"from"`
	To   string `json:"to"`
	ToolHeadline
}

// ToolDay is one day (or hour) of a tool series: Date its UTC day, Start
// its first instant.
type ToolDay struct {
	Date   string    `json:"date"`
	Start  time.Time `json:"start"`
	Calls  int64     `json:"calls"`
	Errors int64     `json:"errors"`
	P95Ms  *float64  `json:"p95_ms"`
}

// ErrorTypeCount is how often a tool failed with one error type, with the
// message of the most recent such error.
type ErrorTypeCount struct {
	ErrorType   string `json:"error_type"`
	Count       int64  `json:"count"`
	LastMessage string `json:"last_message"`
}

// ToolClient is how many calls of a tool one client made.
type ToolClient struct {
	ClientName string `json:"client_name"`
	Calls      int64  `json:"calls"`
}
