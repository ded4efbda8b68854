package analytics

import (
	"context"
	"time"
)

// WindowStat is what an alert rule measures over its window: one MCP's
// items of any method (the "" entry) or one tool's tools/call items.
type WindowStat struct {
	Calls  int64
	Errors int64
	// P95Ms is over the items carrying duration_ms; nil when none does.
	P95Ms *float64
}

// WindowReader gives the alert evaluator its rule values.
type WindowReader interface {
	// WindowStats measures [from, to) for many MCPs in one go: by MCP id,
	// then "" for all methods of the MCP and each tool name for its
	// tools/call items. MCPs and tools without items are absent.
	WindowStats(ctx context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]WindowStat, error)
}
