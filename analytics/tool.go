package analytics

import "time"

// ToolList is the tools of one MCP over a range (GET /v1/mcps/{id}/tools):
// tools/call items only, one entry per tool name that had a call, by calls
// descending then name.
type ToolList struct {
	From  string        `json:"from"`
	To    string        `json:"to"`
	Items []ToolSummary `json:"items"`
}

// ToolSummary is one tool's figures over a range. Latencies cover its calls
// that carry duration_ms and are null when none does.
type ToolSummary struct {
	Name      string   `json:"name"`
	Calls     int64    `json:"calls"`
	Errors    int64    `json:"errors"`
	ErrorRate float64  `json:"error_rate"`
	AvgMs     *float64 `json:"avg_ms"`
	P50Ms     *float64 `json:"p50_ms"`
	P95Ms     *float64 `json:"p95_ms"`
	Sessions  int64    `json:"sessions"`
	// LastSeenAt is the time of the tool's last call within the range.
	LastSeenAt time.Time `json:"last_seen_at"`
}

// ToolDetail is one tool over a range (GET /v1/mcps/{id}/tools/{name}). A
// tool without data in the range has zero figures and empty lists, not a
// not-found error: tool names are free text that no registry defines.
type ToolDetail struct {
	Name      string   `json:"name"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Calls     int64    `json:"calls"`
	Errors    int64    `json:"errors"`
	ErrorRate float64  `json:"error_rate"`
	AvgMs     *float64 `json:"avg_ms"`
	P50Ms     *float64 `json:"p50_ms"`
	P95Ms     *float64 `json:"p95_ms"`
	P99Ms     *float64 `json:"p99_ms"`
	// Series has one entry per day of the range, oldest first, zero-filled.
	Series []ToolDay `json:"series"`
	// ErrorTypes lists the tool's errors by type, most frequent first; an
	// error item without error_type is counted under "".
	ErrorTypes []ErrorTypeCount `json:"error_types"`
	// Clients lists the tool's calls by client name, most calls first; items
	// without client_name are counted under "".
	Clients []ToolClient `json:"clients"`
}

// ToolDay is one day of a tool series.
type ToolDay struct {
	Date   string   `json:"date"`
	Calls  int64    `json:"calls"`
	Errors int64    `json:"errors"`
	P95Ms  *float64 `json:"p95_ms"`
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
