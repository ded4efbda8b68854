package analytics

import "context"

// Reader serves the metric reads. Every method takes a validated range
// (ParseRange); an MCP or account with no data gets zero figures and
// zero-filled series, never ENOTFOUND: whether the MCP exists and belongs
// to the caller is checked before, against the accounts store. A store that
// cannot be reached fails with EUNAVAILABLE.
type Reader interface {
	// Overview returns the headline figures of an MCP.
	Overview(ctx context.Context, mcpID string, r Range) (*Overview, error)
	// OverviewHourly returns the overview's series per hour of the range
	// (at most MaxHourlyDays days), oldest first, zero-filled.
	OverviewHourly(ctx context.Context, mcpID string, r Range) ([]OverviewDay, error)
	// ToolHourly returns a tool's series per hour of the range (at most
	// MaxHourlyDays days), oldest first, zero-filled.
	ToolHourly(ctx context.Context, mcpID, name string, r Range) ([]ToolDay, error)
	// Tools returns the MCP's tools, by calls descending.
	Tools(ctx context.Context, mcpID string, r Range) (*ToolList, error)
	// Tool returns one tool; zeros when it has no data.
	Tool(ctx context.Context, mcpID, name string, r Range) (*ToolDetail, error)
	// Insights returns what needs attention (see INSIGHTS.md).
	Insights(ctx context.Context, mcpID string, r Range) (*Insights, error)
	// Sessions returns one page of sessions. limit 0 means
	// DefaultSessionLimit; a limit outside 1..MaxSessionLimit fails with
	// EINVALID, a malformed cursor with EBADREQUEST.
	Sessions(ctx context.Context, mcpID string, r Range, limit int, cursor string) (*SessionPage, error)
	// SessionTimeline returns one page of a session's items, oldest first,
	// within the window w (zero: the whole session). limit 0 means
	// DefaultTimelineLimit; a limit outside 1..MaxTimelineLimit fails with
	// EINVALID, a malformed cursor with EBADREQUEST, and a session without
	// an item of the MCP in the window with ENOTFOUND.
	SessionTimeline(ctx context.Context, mcpID, sessionID string, w TimeWindow, limit int, cursor string) (*SessionTimeline, error)
	// Breakdown returns the MCP's figures split by q.By (ParseBreakdownQuery).
	// A raw dimension over a range holding more than MaxRawBreakdownRows
	// events fails with ERANGETOOLARGE.
	Breakdown(ctx context.Context, mcpID string, r Range, q BreakdownQuery) (*Breakdown, error)
	// Usage returns the account's usage; mcps names the account's MCPs.
	// Usage.Limits is left for the caller to fill.
	Usage(ctx context.Context, accountID string, r Range, mcps []MCPName) (*Usage, error)
}
