package analytics

import "time"

// Shape of the insights read. Each list states the parameters that shaped
// it next to its items, so that a client can say "tools with at least 10
// calls" without hard-coding the number. See INSIGHTS.md.
const (
	// InsightsListLimit caps slowest_tools, failing_tools and top_errors.
	InsightsListLimit = 10
	// InsightsClientLimit caps the clients list.
	InsightsClientLimit = 20
	// FailingMinCalls is the fewest calls a tool needs in the range to be
	// ranked by error rate: 1 failure in 2 calls is noise, not a finding.
	FailingMinCalls = 10
	// IdleLookbackDays is how far before the range idle_tools looks for
	// tools that used to be called.
	IdleLookbackDays = 28
)

// Insights answers "what needs attention" for one MCP over a range
// (GET /v1/mcps/{id}/insights). Every list is computed from the same data
// as the overview and tool reads (tools/call items for the tool lists, any
// method for errors and clients), so its figures agree with them.
type Insights struct {
	From         string       `json:"from"`
	To           string       `json:"to"`
	SlowestTools SlowestTools `json:"slowest_tools"`
	FailingTools FailingTools `json:"failing_tools"`
	TopErrors    TopErrors    `json:"top_errors"`
	Clients      ClientShares `json:"clients"`
	IdleTools    IdleTools    `json:"idle_tools"`
	// Nightly and NightlyAsOf are the same as in the overview.
	Nightly     Nightly `json:"nightly"`
	NightlyAsOf *string `json:"nightly_as_of"`
}

// SlowestTools lists the tools with the highest p95 latency in the range,
// at most Limit, p95 descending then name. Tools whose calls carry no
// duration_ms cannot be ranked and are left out.
type SlowestTools struct {
	Limit int        `json:"limit"`
	Items []SlowTool `json:"items"`
}

// SlowTool is one slow tool: its calls in the range and the latency
// percentiles over those carrying duration_ms.
type SlowTool struct {
	Name  string  `json:"name"`
	Calls int64   `json:"calls"`
	P95Ms float64 `json:"p95_ms"`
	P50Ms float64 `json:"p50_ms"`
}

// FailingTools lists the tools with the highest error rate among those
// with at least MinCalls calls and one error in the range, at most Limit,
// error rate descending, then calls descending, then name.
type FailingTools struct {
	MinCalls int64         `json:"min_calls"`
	Limit    int           `json:"limit"`
	Items    []FailingTool `json:"items"`
}

// FailingTool is one failing tool's figures in the range.
type FailingTool struct {
	Name      string  `json:"name"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"error_rate"`
}

// TopErrors lists the most frequent errors in the range, grouped by method,
// name and error type, at most Limit, count descending, then most recent.
type TopErrors struct {
	Limit int        `json:"limit"`
	Items []TopError `json:"items"`
}

// TopError is one kind of error: ErrorType ("" when the items said only
// status "error") raised by Method on Name (the tool for tools/call, the
// resource or prompt otherwise), with the message and time of the last one.
type TopError struct {
	ErrorType   string    `json:"error_type"`
	Method      string    `json:"method"`
	Name        string    `json:"name"`
	Count       int64     `json:"count"`
	LastMessage string    `json:"last_message"`
	LastSeenAt  time.Time `json:"last_seen_at"`
}

// ClientShares lists the clients (name and version, "" when not sent) by
// calls descending, at most Limit. Shares are of the range's totals, so
// they sum to at most 1 for calls; a session that changed client counts for
// each, so session shares can sum to more than 1.
type ClientShares struct {
	Limit int           `json:"limit"`
	Items []ClientShare `json:"items"`
}

// ClientShare is one client version's part of the traffic.
type ClientShare struct {
	ClientName    string `json:"client_name"`
	ClientVersion string `json:"client_version"`
	// ProtocolVersions are the MCP protocol revisions this client version
	// made its calls under in the range, by calls descending (empty when
	// it sent none).
	ProtocolVersions []string `json:"protocol_versions"`
	Calls            int64    `json:"calls"`
	Sessions         int64    `json:"sessions"`
	// CallShare is Calls over all calls of the range (any method).
	CallShare float64 `json:"call_share"`
	// SessionShare is Sessions over all sessions of the range.
	SessionShare float64 `json:"session_share"`
}

// IdleTools lists the tools that were called in the LookbackDays days
// before the range and not at all in it: a tool that clients stopped using
// is often a broken or renamed one. Calls before descending, then name.
type IdleTools struct {
	LookbackDays int        `json:"lookback_days"`
	Items        []IdleTool `json:"items"`
}

// IdleTool is one tool gone quiet.
type IdleTool struct {
	Name string `json:"name"`
	// LastSeenAt is its last call before the range.
	LastSeenAt time.Time `json:"last_seen_at"`
	// CallsBefore counts its calls in the lookback days.
	CallsBefore int64 `json:"calls_before"`
}
