package analytics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// NightlyWindowDays is the span of the nightly figures: the 28 days ending
// on the day they are computed for.
const NightlyWindowDays = 28

// Nightly holds the engagement figures of one MCP computed by the nightly
// pass over the NightlyWindowDays days ending on its as-of day. They are
// all null before the first pass.
type Nightly struct {
	// ActiveUsers28d counts distinct users over the 28 days (a user is a
	// user_id, or the session id for items without one).
	ActiveUsers28d *int64 `json:"active_users_28d"`
	// Stickiness is the mean number of daily users over the 28 days divided
	// by ActiveUsers28d: 1 when every user came every day, 1/28 when each
	// came once; 0 when there were no users.
	Stickiness *float64 `json:"stickiness"`
	// Retention7d is the share of the users active in days -13..-7 (the as-of
	// day being 0) who were active again in days -6..0. It is null when
	// nobody was active in days -13..-7: a rate over no one is undefined,
	// and 0 would read as "everyone left".
	Retention7d *float64 `json:"retention_7d"`
}

// NightlyService runs the nightly pass. The figures it stores reach users
// through Reader (Overview, Insights).
type NightlyService interface {
	// ComputeNightly computes and stores the nightly figures of every MCP
	// for the NightlyWindowDays days ending on day (its UTC day), returning
	// how many MCPs had users. Re-running a day replaces its figures.
	ComputeNightly(ctx context.Context, day time.Time) (mcps int, err error)
	// NightlyLastDay returns the last day the pass covered, false before
	// the first pass (to catch up missed days on start).
	NightlyLastDay(ctx context.Context) (time.Time, bool, error)
}

// NightlyRunner is the nightly pass's policy: which days to compute (up to
// the end of the previous UTC day, catching up missed days), exactly once
// across instances (Lock), idempotently (re-running a day replaces its
// figures). The schedule that calls Pass is the caller's.
type NightlyRunner struct {
	Service NightlyService
	// Lock runs fn unless another instance holds the nightly lock, in which
	// case it returns ran = false at once.
	Lock func(ctx context.Context, fn func(context.Context) error) (ran bool, err error)
	Log  *slog.Logger
	// FirstPassDays is how far back the first pass reaches.
	FirstPassDays int
	Now           func() time.Time
	// Progress, when set, gets a line per computed day.
	Progress io.Writer
	// OnSuccess, when set, is called after each computed day.
	OnSuccess func(time.Time)
}

// CatchUpDays lists the days to compute: after the last computed day (or
// FirstPassDays days back on the first pass) through yesterday.
func (n *NightlyRunner) CatchUpDays(ctx context.Context) ([]time.Time, error) {
	yesterday := UTCDay(n.Now()).AddDate(0, 0, -1)
	first := yesterday.AddDate(0, 0, -(n.FirstPassDays - 1))
	last, ok, err := n.Service.NightlyLastDay(ctx)
	if err != nil {
		return nil, err
	}
	if ok && !UTCDay(last).Before(first) {
		first = UTCDay(last).AddDate(0, 0, 1)
	}
	var days []time.Time
	for d := first; !d.After(yesterday); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	return days, nil
}

// Pass computes the missed days under the lock; another instance running
// the pass is not an error.
func (n *NightlyRunner) Pass(ctx context.Context) error {
	ran, err := n.Lock(ctx, func(ctx context.Context) error {
		days, err := n.CatchUpDays(ctx)
		if err != nil {
			return err
		}
		return n.compute(ctx, days)
	})
	if err == nil && !ran {
		n.Log.Info("nightly pass: another instance is running it")
	}
	return err
}

// Compute runs the given days in order under the lock, failing when
// another instance is running the pass.
func (n *NightlyRunner) Compute(ctx context.Context, days []time.Time) error {
	ran, err := n.Lock(ctx, func(ctx context.Context) error { return n.compute(ctx, days) })
	if err == nil && !ran {
		return fmt.Errorf("another instance is running the nightly pass; try again in a moment")
	}
	return err
}

// compute runs the given days in order, printing progress.
func (n *NightlyRunner) compute(ctx context.Context, days []time.Time) error {
	for i, d := range days {
		start := time.Now()
		mcps, err := n.Service.ComputeNightly(ctx, d)
		if err != nil {
			return fmt.Errorf("nightly %s: %w", d.Format(time.DateOnly), err)
		}
		n.Log.Info("nightly pass", "day", d.Format(time.DateOnly), "mcps", mcps, "duration", time.Since(start))
		if n.Progress != nil {
			fmt.Fprintf(n.Progress, "[%d/%d] %s: %d MCPs in %s\n", i+1, len(days), d.Format(time.DateOnly), mcps, time.Since(start).Round(time.Millisecond))
		}
		if n.OnSuccess != nil {
			n.OnSuccess(time.Now())
		}
	}
	return nil
}

// NightlyDays parses the days a by-hand run asks for: one day (date,
// default the day before now) or an inclusive range (from, to) of at most
// MaxRangeDays days.
func NightlyDays(date, from, to string, now time.Time) ([]time.Time, error) {
	parse := func(s string) (time.Time, error) {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return d, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
		return d, nil
	}
	switch {
	case date != "" && (from != "" || to != ""):
		return nil, fmt.Errorf("give --date or --from/--to, not both")
	case from != "" || to != "":
		if from == "" || to == "" {
			return nil, fmt.Errorf("--from and --to go together")
		}
		a, err := parse(from)
		if err != nil {
			return nil, err
		}
		b, err := parse(to)
		if err != nil {
			return nil, err
		}
		if b.Before(a) {
			return nil, fmt.Errorf("--from must not be after --to")
		}
		if NewRange(a, b).NumDays() > MaxRangeDays {
			return nil, fmt.Errorf("at most %d days at a time", MaxRangeDays)
		}
		var days []time.Time
		for d := a; !d.After(b); d = d.AddDate(0, 0, 1) {
			days = append(days, d)
		}
		return days, nil
	case date != "":
		d, err := parse(date)
		if err != nil {
			return nil, err
		}
		return []time.Time{d}, nil
	default:
		return []time.Time{UTCDay(now).AddDate(0, 0, -1)}, nil
	}
}
