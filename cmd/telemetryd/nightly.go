package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/postgres"
)

// nightlyRunner wires the nightly pass's policy (analytics.NightlyRunner)
// to ClickHouse and the Postgres advisory lock that keeps it once across
// instances; its schedule is a background job (jobs.go).
func (m *Main) nightlyRunner(progress io.Writer, onSuccess func(time.Time)) *analytics.NightlyRunner {
	return &analytics.NightlyRunner{
		Service: m.CH.Lifecycle,
		Lock: func(ctx context.Context, fn func(context.Context) error) (bool, error) {
			return m.PG.TryLocked(ctx, postgres.LockNightly, fn)
		},
		Log: m.Log, FirstPassDays: m.Config.Nightly.CatchUpDays, Now: time.Now,
		Progress: progress, OnSuccess: onSuccess,
	}
}

// RunNightlyCommand is `telemetryd nightly`: one day (--date, default
// yesterday) or a range (--from, --to), with progress on out.
func (m *Main) RunNightlyCommand(ctx context.Context, date, from, to string, out io.Writer) error {
	if err := m.CH.Migrator.Migrate(ctx); err != nil {
		return err
	}
	days, err := analytics.NightlyDays(date, from, to, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "computing nightly metrics for %d day(s)\n", len(days))
	return m.nightlyRunner(out, nil).Compute(ctx, days)
}
