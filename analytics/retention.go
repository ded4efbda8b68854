package analytics

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// AccountRetention is one account's effective retention (0: forever) and
// the MCPs whose telemetry it covers.
type AccountRetention struct {
	AccountID string
	Days      int
	MCPIDs    []string
}

// RetentionStep is one action of a retention pass.
type RetentionStep struct {
	// Kind is "drop" (whole partitions before Before, every account
	// allows it, and the rows before Before in Tables, which keep
	// partitions or have none), "delete" (one account's rows before
	// Before, in partitions other accounts still keep) or "markers" (the
	// insert ledger's marker rows of days before Before, in the Tables
	// without partitions: they are not items, and partitions take the
	// others with them).
	Kind      string
	Before    time.Time // the first day kept
	AccountID string    // "delete" only
	MCPIDs    []string  // "delete" only
	// Partitions lists what a drop removes (table: partition); Rows is
	// how many raw items the step removes, counted when planned.
	Partitions []string
	Rows       uint64
	// Tables lists the tables a drop or markers step deletes rows from.
	Tables []string
}

// String describes the step for progress output.
func (s RetentionStep) String() string {
	if s.Kind == "markers" {
		return fmt.Sprintf("remove %s of days before %s from %s", Count(int(s.Rows), "insert marker"), s.Before.Format(DateLayout), strings.Join(s.Tables, ", "))
	}
	if s.Kind == "drop" {
		out := fmt.Sprintf("drop %s before %s (%s)", Count(len(s.Partitions), "partition"), s.Before.Format(DateLayout), Count(int(s.Rows), "raw item"))
		if len(s.Tables) > 0 {
			out += ", and the rows before it in " + strings.Join(s.Tables, ", ")
		}
		return out
	}
	return fmt.Sprintf("delete account %s (%s) before %s (%s)", s.AccountID, Count(len(s.MCPIDs), "MCP"), s.Before.Format(DateLayout), Count(int(s.Rows), "raw item"))
}

// Count is n and the noun, plural unless n is 1 ("1 partition", "2
// partitions"), for progress output.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// RetentionStore carries out retention in the metrics store.
type RetentionStore interface {
	// PlanRetention returns what a pass on day today would remove, given
	// every account's retention and the installation's (0: forever).
	PlanRetention(ctx context.Context, installation int, accounts []AccountRetention, today time.Time) ([]RetentionStep, error)
	// ApplyRetention carries out one planned step.
	ApplyRetention(ctx context.Context, step RetentionStep) error
}

// RetentionCutoffs computes the two cut-offs of a pass: dropBefore, the
// first day some account keeps (whole partitions before it go; zero when
// some account keeps forever), and, per account keeping less, the first
// day it keeps. Accounts without MCPs are left out.
func RetentionCutoffs(installation int, accounts []AccountRetention, today time.Time) (dropBefore time.Time, per map[string]time.Time) {
	longest := installation
	if len(accounts) > 0 {
		longest = -1
		for _, a := range accounts {
			if a.Days <= 0 {
				longest = 0
				break
			}
			longest = max(longest, a.Days)
		}
	}
	dropBefore = KeptFrom(longest, today)
	per = map[string]time.Time{}
	for _, a := range accounts {
		kept := KeptFrom(a.Days, today)
		if len(a.MCPIDs) > 0 && !kept.IsZero() && kept.After(dropBefore) {
			per[a.AccountID] = kept
		}
	}
	return dropBefore, per
}
