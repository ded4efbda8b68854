package analytics

// Usage is what an account ingested over a range (GET /v1/account/usage).
// Events are counted on the UTC day they were accepted, not on their own
// timestamp: usage meters the service's work, and an item sent late is
// work done the day it arrives.
type Usage struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Events int64  `json:"events"`
	// Days has one entry per day of the range, oldest first, zero-filled.
	Days []UsageDay `json:"days"`
	// MCPs has one entry per MCP of the account (zero when it sent
	// nothing), plus one per since-deleted MCP that sent events in the
	// range, by events descending then id.
	MCPs []UsageMCP `json:"mcps"`
	// Limits are the account's ingest limits; the reader leaves them zero
	// and the caller, which owns the configuration, fills them.
	Limits UsageLimits `json:"limits"`
}

// UsageDay is the events accepted on one day.
type UsageDay struct {
	Date   string `json:"date"`
	Events int64  `json:"events"`
}

// UsageMCP is the events one MCP sent over the range. Name is null for an
// MCP deleted since: its events still count.
type UsageMCP struct {
	MCPID  string  `json:"mcp_id"`
	Name   *string `json:"name"`
	Events int64   `json:"events"`
}

// UsageLimits are the ingest limits that apply to the account.
type UsageLimits struct {
	IngestPayloadsPerMinute int `json:"ingest_payloads_per_minute"`
	MaxBatchItems           int `json:"max_batch_items"`
	MaxBodyBytes            int `json:"max_body_bytes"`
}

// MCPName names one of the account's MCPs for a usage read; the metrics
// store knows MCPs only by id.
type MCPName struct {
	ID   string
	Name string
}
