package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/postgres"
)

// nightlyRunner wires the nightly pass's policy (analytics.NightlyRunner)
// to ClickHouse and the Postgres advisory lock that keeps it once across
// instances.
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

// runNightly catches up once at start, then runs the pass on the schedule
// until ctx ends; after each scheduled pass, after (the retention pass).
func runNightly(ctx context.Context, n *analytics.NightlyRunner, schedule string, after func(context.Context)) error {
	if err := n.Pass(ctx); err != nil && ctx.Err() == nil {
		n.Log.Error("nightly catch-up failed; the schedule will retry", "error", err)
	}
	l := cronLogger{n.Log}
	c := cron.New(cron.WithLocation(time.UTC), cron.WithChain(cron.Recover(l), cron.SkipIfStillRunning(l)))
	if _, err := c.AddFunc(schedule, func() {
		if err := n.Pass(ctx); err != nil && ctx.Err() == nil {
			n.Log.Error("nightly pass failed", "error", err)
		}
		if after != nil && ctx.Err() == nil {
			after(ctx)
		}
	}); err != nil {
		return err
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "error", err)...)
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
