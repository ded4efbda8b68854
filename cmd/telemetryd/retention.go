package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/postgres"
)

// RunRetention is one retention pass (the nightly job's last step, and
// `telemetryd retention`): every account's retention from PostgreSQL, the
// plan from ClickHouse, then each step with progress on out (nil: the log
// only). dryRun prints the plan and changes nothing. The pass holds an
// advisory lock, so instances never run it at once; ran is false when
// another instance holds it.
func (m *Main) RunRetention(ctx context.Context, dryRun bool, out io.Writer) (ran bool, err error) {
	return m.PG.TryLocked(ctx, postgres.LockRetention, func(ctx context.Context) error {
		say := func(format string, args ...any) {
			if out != nil {
				fmt.Fprintf(out, format+"\n", args...)
			}
		}
		installation := m.Config.Storage.RetentionDays
		if m.Accounts == nil {
			m.Accounts = postgres.NewAccountService(m.PG)
		}
		accts, err := m.Accounts.Retentions(ctx, installation)
		if err != nil {
			return err
		}
		steps, err := m.CH.Lifecycle.PlanRetention(ctx, installation, accts, time.Now())
		if err != nil {
			return err
		}
		kept := "forever"
		if installation > 0 {
			kept = fmt.Sprintf("%d days", installation)
		}
		say("retention: installation keeps %s; %s; %s", kept, analytics.Count(len(accts), "account"), analytics.Count(len(steps), "step"))
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
			if err := m.CH.Lifecycle.ApplyRetention(ctx, s); err != nil {
				return fmt.Errorf("retention step %d (%s): %w", i+1, s, err)
			}
			m.Log.Info("retention step done", "step", s.String(), "duration", time.Since(start))
			say("[%d/%d] done in %s", i+1, len(steps), time.Since(start).Round(time.Millisecond))
		}
		if dryRun {
			say("dry run: nothing was changed")
		}
		return nil
	})
}

// retentionAfterNightly enforces retention once a day, after the nightly
// pass (storage.retention_days and the accounts' retention_days).
func (m *Main) retentionAfterNightly(ctx context.Context) {
	if _, err := m.RunRetention(ctx, false, nil); err != nil && ctx.Err() == nil {
		m.Log.Error("retention pass failed; the next night retries", "error", err)
	}
}
