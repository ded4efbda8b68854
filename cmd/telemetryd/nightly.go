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

// nightly runs the nightly pass: up to the end of the previous UTC day,
// catching up missed days, exactly once across instances (a Postgres
// advisory lock), idempotently (re-running a day replaces its figures).
type nightly struct {
	svc      analytics.NightlyService
	pg       *postgres.DB
	log      *slog.Logger
	catchUp  int
	now      func() time.Time
	progress io.Writer
	// lastSuccess is reported by /metrics.
	lastSuccess func(time.Time)
}

func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// catchUpDays lists the days to compute: after the last computed day (or
// catchUp days back on the first pass) through yesterday.
func (n *nightly) catchUpDays(ctx context.Context) ([]time.Time, error) {
	yesterday := utcDay(n.now()).AddDate(0, 0, -1)
	first := yesterday.AddDate(0, 0, -(n.catchUp - 1))
	last, ok, err := n.svc.NightlyLastDay(ctx)
	if err != nil {
		return nil, err
	}
	if ok && !utcDay(last).Before(first) {
		first = utcDay(last).AddDate(0, 0, 1)
	}
	var days []time.Time
	for d := first; !d.After(yesterday); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	return days, nil
}

// pass computes the missed days under the advisory lock.
func (n *nightly) pass(ctx context.Context) error {
	ran, err := n.pg.TryLocked(ctx, postgres.LockNightly, func(ctx context.Context) error {
		days, err := n.catchUpDays(ctx)
		if err != nil {
			return err
		}
		return n.compute(ctx, days)
	})
	if err == nil && !ran {
		n.log.Info("nightly pass: another instance is running it")
	}
	return err
}

// compute runs the given days in order, printing progress.
func (n *nightly) compute(ctx context.Context, days []time.Time) error {
	for i, d := range days {
		start := time.Now()
		mcps, err := n.svc.ComputeNightly(ctx, d)
		if err != nil {
			return fmt.Errorf("nightly %s: %w", d.Format(time.DateOnly), err)
		}
		n.log.Info("nightly pass", "day", d.Format(time.DateOnly), "mcps", mcps, "duration", time.Since(start))
		if n.progress != nil {
			fmt.Fprintf(n.progress, "[%d/%d] %s: %d MCPs in %s\n", i+1, len(days), d.Format(time.DateOnly), mcps, time.Since(start).Round(time.Millisecond))
		}
		if n.lastSuccess != nil {
			n.lastSuccess(time.Now())
		}
	}
	return nil
}

// run catches up once at start, then runs on the schedule until ctx ends.
func (n *nightly) run(ctx context.Context, schedule string) error {
	if err := n.pass(ctx); err != nil && ctx.Err() == nil {
		n.log.Error("nightly catch-up failed; the schedule will retry", "error", err)
	}
	l := cronLogger{n.log}
	c := cron.New(cron.WithLocation(time.UTC), cron.WithChain(cron.Recover(l), cron.SkipIfStillRunning(l)))
	if _, err := c.AddFunc(schedule, func() {
		if err := n.pass(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("nightly pass failed", "error", err)
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
	if err := m.CH.Migrate(ctx); err != nil {
		return err
	}
	n := &nightly{svc: m.CH, pg: m.PG, log: m.Log, now: time.Now, progress: out}
	var days []time.Time
	parse := func(s string) (time.Time, error) {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return d, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
		return d, nil
	}
	switch {
	case date != "" && (from != "" || to != ""):
		return fmt.Errorf("give --date or --from/--to, not both")
	case from != "" || to != "":
		if from == "" || to == "" {
			return fmt.Errorf("--from and --to go together")
		}
		a, err := parse(from)
		if err != nil {
			return err
		}
		b, err := parse(to)
		if err != nil {
			return err
		}
		if b.Before(a) {
			return fmt.Errorf("--from must not be after --to")
		}
		if analytics.NewRange(a, b).NumDays() > analytics.MaxRangeDays {
			return fmt.Errorf("at most %d days at a time", analytics.MaxRangeDays)
		}
		for d := a; !d.After(b); d = d.AddDate(0, 0, 1) {
			days = append(days, d)
		}
	default:
		d := utcDay(time.Now()).AddDate(0, 0, -1)
		if date != "" {
			var err error
			if d, err = parse(date); err != nil {
				return err
			}
		}
		days = []time.Time{d}
	}
	fmt.Fprintf(out, "computing nightly metrics for %d day(s)\n", len(days))
	ran, err := m.PG.TryLocked(ctx, postgres.LockNightly, func(ctx context.Context) error { return n.compute(ctx, days) })
	if err == nil && !ran {
		return fmt.Errorf("another instance is running the nightly pass; try again in a moment")
	}
	return err
}
