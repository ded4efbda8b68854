package alerting

import (
	"context"
	"log/slog"
	"time"
)

// PassObserver records what evaluation passes did (the service's metrics).
type PassObserver interface {
	ObservePass(sum PassSummary, err error, took time.Duration)
}

// RunEvaluator evaluates every enabled rule each interval until ctx ends. A
// pass slower than the interval delays the next one (ticks are dropped, not
// queued); a pass is bounded by a timeout, so a stuck dependency cannot hold
// the evaluator, and its pass lock, forever. Stopping cancels the pass in
// flight, whose open transition rolls back: no half-fired rule. obs may be
// nil.
func RunEvaluator(ctx context.Context, ev Evaluator, interval time.Duration, log *slog.Logger, obs PassObserver) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(interval, time.Minute))
		start := time.Now()
		sum, err := ev.EvaluateAll(pctx, start)
		cancel()
		took := time.Since(start)
		if obs != nil {
			obs.ObservePass(sum, err, took)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("rule evaluation pass failed", "error", err.Error(), "rules", sum.Rules, "failed", sum.Failed, "fired", sum.Fired)
		case sum.Fired > 0 || sum.Resolved > 0:
			log.Info("rule evaluation pass", "rules", sum.Rules, "fired", sum.Fired, "resolved", sum.Resolved, "took", took)
		}
	}
}
