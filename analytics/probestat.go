package analytics

import (
	"context"
	"time"
)

// ProbeStat is an MCP's probe state as the alert evaluator sees it (rule
// metric probe_down, and the note of a calls rule with < or <=): the
// enabled probe of the MCP with the most consecutive failed checks.
type ProbeStat struct {
	// Status is "up", "down" or "unknown" (never checked).
	Status string
	// Failures counts the failed checks since the last good one.
	Failures int64
	// DownSince is the first failed check of the run (zero while up).
	DownSince time.Time
	// LastError is the last failed check's "kind: detail" ("" while up).
	LastError string
}

// ProbeStatReader reads the probe states of MCPs.
type ProbeStatReader interface {
	// ProbeStats returns, by MCP id, the state of each MCP of mcpIDs that
	// has an enabled probe; the others are absent.
	ProbeStats(ctx context.Context, mcpIDs []string) (map[string]ProbeStat, error)
}
