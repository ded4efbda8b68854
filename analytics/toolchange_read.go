package analytics

import (
	"context"
	"time"
)

// Reads of graded tool changes (docs/tool-changes.md).

// Impact bounds: a change's affected clients are read over the 7 days
// before it, at most MaxAffectedClients of them; its after window runs
// from the change to now, at most ImpactWindowMax, and its before window
// has the same length and ends at the change.
const (
	AffectedClientsWindow = 7 * 24 * time.Hour
	ImpactWindowMax       = 7 * 24 * time.Hour
	MaxAffectedClients    = 100
	// MaxToolDefinitions bounds the definitions an MCP keeps besides
	// those of its listed tools.
	MaxToolDefinitions = 1000
)

// AffectedClient is a client that called a changed tool in the 7 days
// before the change.
type AffectedClient struct {
	ClientName  string `json:"client_name"`
	CallsBefore int64  `json:"calls_before"`
}

// ImpactWindow is a tool's calls over one window of a change's impact.
type ImpactWindow struct {
	From       time.Time        `json:"from"`
	To         time.Time        `json:"to"`
	Calls      int64            `json:"calls"`
	Errors     int64            `json:"errors"`
	ErrorRate  float64          `json:"error_rate"`
	ErrorKinds map[string]int64 `json:"error_kinds"`
}

// ToolChangeImpact is who a change hit and how the tool fared after it.
type ToolChangeImpact struct {
	// AffectedClients are encoded as the change's (InventoryChange).
	AffectedClients []AffectedClient `json:"-"`
	Before          ImpactWindow     `json:"before"`
	After           ImpactWindow     `json:"after"`
}

// ImpactWindows are the matched windows of a change at at, read at now:
// after is [at, min(now, at+ImpactWindowMax)), before the same length
// ending at at (empty when now is not after at).
func ImpactWindows(at, now time.Time) (before, after ImpactWindow) {
	end := now
	if end.After(at.Add(ImpactWindowMax)) {
		end = at.Add(ImpactWindowMax)
	}
	if end.Before(at) {
		end = at
	}
	length := end.Sub(at)
	return ImpactWindow{From: at.Add(-length), To: at, ErrorKinds: map[string]int64{}},
		ImpactWindow{From: at, To: end, ErrorKinds: map[string]int64{}}
}

// SetRate sets ErrorRate from Calls and Errors (0 without calls).
func (w *ImpactWindow) SetRate() {
	w.ErrorRate = 0
	if w.Calls > 0 {
		w.ErrorRate = float64(w.Errors) / float64(w.Calls)
	}
}

// ToolChangeImpactReader reads a change's impact from the events.
type ToolChangeImpactReader interface {
	// ToolChangeImpact reads the clients that called tool in the
	// AffectedClientsWindow before at, most calls first, and its calls
	// over ImpactWindows(at, now).
	ToolChangeImpact(ctx context.Context, mcpID, tool string, at, now time.Time) (ToolChangeImpact, error)
}

// AffectedClientsReader reads the affected clients of many changes at
// once (the inventory read's changes).
type AffectedClientsReader interface {
	// AffectedClients answers, per change (by index), the clients that
	// called its tool in the AffectedClientsWindow before its At, most
	// calls first, at most MaxAffectedClients. A read over more events
	// than a raw read may read fails with ErrTooManyEvents.
	AffectedClients(ctx context.Context, mcpID string, changes []InventoryChange) ([][]AffectedClient, error)
}

// ToolChangeDetail is GET /v1/mcps/{id}/inventory/changes/{change_id}.
type ToolChangeDetail struct {
	InventoryChange
	ToolChangeImpact
	// BeforeDefinition and AfterDefinition are the tool's definitions
	// (null when not reported or dropped); Diff their line diff.
	BeforeDefinition any    `json:"before_definition"`
	AfterDefinition  any    `json:"after_definition"`
	Diff             string `json:"diff"`
}

// ToolChangeCount counts a window's changes by severity: All of them
// (graded or not), and those breaking and risky.
type ToolChangeCount struct {
	All, Breaking, Risky int64
}

// AtLeast counts the changes at least as severe as severity ("" or
// benign: all).
func (c ToolChangeCount) AtLeast(severity string) int64 {
	switch severity {
	case SeverityBreaking:
		return c.Breaking
	case SeverityRisky:
		return c.Breaking + c.Risky
	}
	return c.All
}

// ToolChangeStore reads the graded changes kept by the inventory.
type ToolChangeStore interface {
	// ToolChange returns one change of the MCP with its definitions
	// (raw JSON, nil when unknown); ENOTFOUND when the MCP has none of
	// that id.
	ToolChange(ctx context.Context, mcpID, changeID string) (c InventoryChange, before, after []byte, err error)
	// RecentToolChanges returns the MCP's changes in [from, to), newest
	// first, of tool when not nil, at least minSeverity when not "", at
	// most limit, and how many there are in all.
	RecentToolChanges(ctx context.Context, mcpID string, from, to time.Time, tool *string, minSeverity string, limit int) ([]InventoryChange, int, error)
}
