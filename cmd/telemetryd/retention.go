package main

import (
	"context"
	"io"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/postgres"
)

// retentionRunner wires the retention pass (analytics.RetentionRunner) to
// the accounts in PostgreSQL, ClickHouse, and the advisory lock that keeps
// it once across instances.
func (m *Main) retentionRunner() *analytics.RetentionRunner {
	if m.Accounts == nil {
		m.Accounts = postgres.NewAccountService(m.PG)
	}
	return &analytics.RetentionRunner{
		Store: m.CH, Accounts: m.Accounts,
		Lock: func(ctx context.Context, fn func(context.Context) error) (bool, error) {
			return m.PG.TryLocked(ctx, postgres.LockRetention, fn)
		},
		Log: m.Log, InstallationDays: m.Config.Storage.RetentionDays, Now: time.Now,
	}
}

// RunRetention is one retention pass (the nightly job's last step, and
// `telemetryd retention`), with progress on out (nil: the log only); ran
// is false when another instance holds the lock.
func (m *Main) RunRetention(ctx context.Context, dryRun bool, out io.Writer) (ran bool, err error) {
	return m.retentionRunner().Run(ctx, dryRun, out)
}
