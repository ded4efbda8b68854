package alerting

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// PassObserver records what evaluation passes did (the service's metrics).
type PassObserver interface {
	ObservePass(sum PassSummary, err error, took time.Duration)
}

// PassTimeout bounds one evaluation pass run every interval: the interval,
// at least a minute. A stuck dependency cannot hold the evaluator, and its
// pass lock, forever; stopping cancels the pass in flight, whose open
// transition rolls back: no half-fired rule.
func PassTimeout(interval time.Duration) time.Duration { return max(interval, time.Minute) }

// EvaluationPass is one pass of the evaluator over every enabled rule,
// for a background job (cmd/telemetryd runs it every
// alerting.evaluate_interval under PassTimeout). obs may be nil.
func EvaluationPass(ev Evaluator, log *slog.Logger, obs PassObserver) func(context.Context) error {
	return func(ctx context.Context) error {
		start := time.Now()
		sum, err := ev.EvaluateAll(ctx, start)
		took := time.Since(start)
		if obs != nil {
			obs.ObservePass(sum, err, took)
		}
		if err != nil {
			return fmt.Errorf("rule evaluation (%d rules, %d failed, %d fired): %w", sum.Rules, sum.Failed, sum.Fired, err)
		}
		if sum.Fired > 0 || sum.Resolved > 0 {
			log.Info("rule evaluation pass", "rules", sum.Rules, "fired", sum.Fired, "resolved", sum.Resolved, "took", took)
		}
		return nil
	}
}
