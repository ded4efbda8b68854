package analytics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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

// RetentionSource lists every account's effective retention.
type RetentionSource interface {
	// Retentions returns each account's retention (the installation's,
	// installation days, where the account sets none) and its MCPs.
	Retentions(ctx context.Context, installation int) ([]AccountRetention, error)
}

// RetentionRunner is the retention pass's policy: every account's
// retention (Accounts), the plan and its steps (Store), once across
// instances (Lock). The nightly schedule and `telemetryd retention` call
// Run (docs/data-lifecycle.md).
type RetentionRunner struct {
	Store    RetentionStore
	Accounts RetentionSource
	// Lock runs fn unless another instance holds the retention lock, in
	// which case it returns ran = false at once.
	Lock func(ctx context.Context, fn func(context.Context) error) (ran bool, err error)
	Log  *slog.Logger
	// InstallationDays is the installation's retention (0: forever).
	InstallationDays int
	Now              func() time.Time
}

// Run is one retention pass: the plan, then each step, with progress on
// out (nil: the log only). dryRun prints the plan and changes nothing.
// ran is false when another instance holds the lock.
func (r *RetentionRunner) Run(ctx context.Context, dryRun bool, out io.Writer) (ran bool, err error) {
	return r.Lock(ctx, func(ctx context.Context) error { return r.pass(ctx, dryRun, out) })
}

func (r *RetentionRunner) pass(ctx context.Context, dryRun bool, out io.Writer) error {
	say := func(format string, args ...any) {
		if out != nil {
			fmt.Fprintf(out, format+"\n", args...)
		}
	}
	installation := r.InstallationDays
	accts, err := r.Accounts.Retentions(ctx, installation)
	if err != nil {
		return err
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	steps, err := r.Store.PlanRetention(ctx, installation, accts, now())
	if err != nil {
		return err
	}
	kept := "forever"
	if installation > 0 {
		kept = fmt.Sprintf("%d days", installation)
	}
	say("retention: installation keeps %s; %s; %s", kept, Count(len(accts), "account"), Count(len(steps), "step"))
	for i, s := range steps {
		if dryRun {
			say("[%d/%d] would %s", i+1, len(steps), s)
			for _, p := range s.Partitions {
				say("        %s", p)
			}
			continue
		}
		start := time.Now()
		say("[%d/%d] %s ...", i+1, len(steps), s)
		if err := r.Store.ApplyRetention(ctx, s); err != nil {
			return fmt.Errorf("retention step %d (%s): %w", i+1, s, err)
		}
		r.Log.Info("retention step done", "step", s.String(), "duration", time.Since(start))
		say("[%d/%d] done in %s", i+1, len(steps), time.Since(start).Round(time.Millisecond))
	}
	if dryRun {
		say("dry run: nothing was changed")
	}
	return nil
}
