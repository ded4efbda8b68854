package analytics

import (
	"context"
	"time"
)

// ListedToolReader tells which tools an MCP's inventory listed at some
// time in a window (docs/inventory.md).
type ListedToolReader interface {
	// ListedTools returns the names of the tools first seen before to and
	// seen at or after from, or still listed; empty when the MCP never
	// reported an inventory.
	ListedTools(ctx context.Context, mcpID string, from, to time.Time) ([]string, error)
}

// UnknownCallReader counts the calls of unknown tools of a window.
type UnknownCallReader interface {
	// UnknownCallCounts counts the MCP's items of [from, to) with
	// error_kind unknown_tool and, when listed is not empty, its tools/call
	// items naming a tool not in listed: "" for all of them and each name
	// (at most MaxUnknownTools names, the most called).
	UnknownCallCounts(ctx context.Context, mcpID string, from, to time.Time, listed []string) (map[string]int64, error)
}

// UnknownToolRuleCounter is the UnknownToolCounter of the alert evaluator:
// for each window, the tools the inventory listed in it (Listed), then the
// calls of other names (Calls): the unknown-tools read's rule, over the
// window instead of whole days.
type UnknownToolRuleCounter struct {
	Listed ListedToolReader
	Calls  UnknownCallReader
}

var _ UnknownToolCounter = UnknownToolRuleCounter{}

// UnknownToolCounts implements UnknownToolCounter: two reads per MCP and
// window length (only rules on unknown_tool_calls ask).
func (c UnknownToolRuleCounter) UnknownToolCounts(ctx context.Context, to time.Time, reqs map[string]WindowRequest) (map[string]map[int]map[string]int64, error) {
	out := map[string]map[int]map[string]int64{}
	for mcpID, req := range reqs {
		for _, minutes := range req.Minutes {
			from := to.Add(-time.Duration(minutes) * time.Minute)
			listed, err := c.Listed.ListedTools(ctx, mcpID, from, to)
			if err != nil {
				return nil, err
			}
			counts, err := c.Calls.UnknownCallCounts(ctx, mcpID, from, to, listed)
			if err != nil {
				return nil, err
			}
			if out[mcpID] == nil {
				out[mcpID] = map[int]map[string]int64{}
			}
			out[mcpID][minutes] = counts
		}
	}
	return out, nil
}
