// Package jobs runs the service's background jobs in one shape: a named
// pass, run on a schedule (an interval, or a cron schedule), one pass at
// a time, each timed and its outcome recorded. The passes themselves are
// the domain's (alerting, accounts, analytics); cmd/telemetryd wires them
// here. A failed pass (a database outage) is logged and the job keeps its
// schedule: it pauses while its dependency is down and resumes on the
// first pass that succeeds, which is logged too.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// Observer records passes (internal/jobmetrics implements it).
type Observer interface {
	// ObservePass records one pass of the named job: its error (nil: it
	// succeeded) and how long it took.
	ObservePass(job string, err error, took time.Duration)
}

// Schedule gives the next run after a time (a cron schedule has this
// shape).
type Schedule interface {
	Next(time.Time) time.Time
}

// Job is one background job.
type Job struct {
	// Name names the job in logs and metrics.
	Name string
	// Every is the interval between passes (ticks, not sleeps: a pass
	// slower than the interval delays the next one, ticks are dropped,
	// never queued). Schedule, when set, is used instead.
	Every    time.Duration
	Schedule Schedule
	// Immediately runs a pass at start, before the first tick.
	Immediately bool
	// Then lists jobs run, in order, after each scheduled pass (not the
	// Immediately one), whatever its outcome; each is logged and recorded
	// under its own name (the retention pass after the nightly one).
	Then []Job
	// Timeout bounds one pass (0: none), so a stuck dependency cannot
	// hold the job, and any lock it takes, forever.
	Timeout time.Duration
	// Pass is one run. Its error is logged (unless ctx ended) and
	// recorded; the job continues.
	Pass func(ctx context.Context) error
	// Done, when set, is called as Run returns, after the last pass (the
	// outbox waits there for the sends its passes started).
	Done func()
	// Log and Observer; Observer may be nil.
	Log      *slog.Logger
	Observer Observer
}

// Run runs the job until ctx ends, then returns nil once the pass in
// flight returned (stopping cancels it).
func Run(ctx context.Context, j Job) error {
	if j.Log == nil {
		j.Log = slog.Default()
	}
	if j.Schedule == nil && j.Every <= 0 {
		return fmt.Errorf("job %s: no interval and no schedule", j.Name)
	}
	if j.Done != nil {
		defer j.Done()
	}
	failing := false
	if j.Immediately {
		failing = j.once(ctx, failing)
	}
	if j.Schedule == nil {
		t := time.NewTicker(j.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			if ctx.Err() != nil {
				return nil // both were ready and select took the tick: stopping wins
			}
			failing = j.once(ctx, failing)
			j.then(ctx)
		}
	}
	for {
		t := time.NewTimer(time.Until(j.Schedule.Next(time.Now())))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if ctx.Err() != nil {
			return nil
		}
		failing = j.once(ctx, failing)
		j.then(ctx)
	}
}

// then runs the jobs that follow a scheduled pass.
func (j Job) then(ctx context.Context) {
	for _, next := range j.Then {
		if ctx.Err() != nil {
			return
		}
		if next.Log == nil {
			next.Log = j.Log
		}
		if next.Observer == nil {
			next.Observer = j.Observer
		}
		next.once(ctx, false)
	}
}

// once runs a pass and logs its outcome: every failure, and the first
// success after failures (the job resumed). It reports whether the pass
// failed.
func (j Job) once(ctx context.Context, failing bool) bool {
	took, err := j.run(ctx)
	if ctx.Err() != nil {
		return failing // stopping: the pass was cancelled, not failed
	}
	if err != nil {
		j.Log.Warn("background job: pass failed; the next one retries", "job", j.Name, "error", err, "took", took)
		return true
	}
	if failing {
		j.Log.Info("background job: resumed", "job", j.Name, "took", took)
	}
	return false
}

// run runs the pass under its timeout, turning a panic into an error.
func (j Job) run(ctx context.Context) (took time.Duration, err error) {
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if j.Timeout > 0 {
		pctx, cancel = context.WithTimeout(ctx, j.Timeout)
	}
	defer cancel()
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		err = j.Pass(pctx)
	}()
	took = time.Since(start)
	if j.Observer != nil && ctx.Err() == nil {
		j.Observer.ObservePass(j.Name, err, took)
	}
	return took, err
}
