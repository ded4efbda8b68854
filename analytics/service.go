package analytics

import (
	"context"
	"time"
)

// Reader serves the metric reads. Every method takes a validated range
// (ParseRange); an MCP or account with no data gets zero figures and
// zero-filled series, never ENOTFOUND: whether the MCP exists and belongs
// to the caller is checked before, against the accounts store. A store that
// cannot be reached fails with EUNAVAILABLE.
type Reader interface {
	// Overview returns the headline figures of an MCP.
	Overview(ctx context.Context, mcpID string, r Range) (*Overview, error)
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
	// Usage returns the account's usage; mcps names the account's MCPs.
	// Usage.Limits is left for the caller to fill.
	Usage(ctx context.Context, accountID string, r Range, mcps []MCPName) (*Usage, error)
}

// WindowReader gives the alert evaluator its rule values.
type WindowReader interface {
	// WindowStats measures [from, to) for many MCPs in one go: by MCP id,
	// then "" for all methods of the MCP and each tool name for its
	// tools/call items. MCPs and tools without items are absent.
	WindowStats(ctx context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]WindowStat, error)
}

// NightlyService runs and reads the nightly pass.
type NightlyService interface {
	// ComputeNightly computes and stores the nightly figures of every MCP
	// for the NightlyWindowDays days ending on day (its UTC day), returning
	// how many MCPs had users. Re-running a day replaces its figures.
	ComputeNightly(ctx context.Context, day time.Time) (mcps int, err error)
	// NightlyLastDay returns the last day the pass covered, false before
	// the first pass (to catch up missed days on start).
	NightlyLastDay(ctx context.Context) (time.Time, bool, error)
	// Nightly returns an MCP's figures as of the last pass and that day
	// (YYYY-MM-DD); null figures and a nil day before the first pass.
	Nightly(ctx context.Context, mcpID string) (*Nightly, *string, error)
}
