package alerting

import (
	"context"
	"errors"
	"sync"
	"time"
)

// RulesAndSLOs is the evaluator pass of the service: the rules and the
// SLOs side by side, under the rules' pass lock, so only the instance
// that runs the rules evaluates the SLOs (not one that found another
// instance's pass under way). Their reads go to ClickHouse at the same
// time, so the pass takes about the longer of the two rather than their
// sum. EvaluateRule is the rules evaluator's.
type RulesAndSLOs struct {
	*RuleEvaluator
	SLOs *SLOEvaluator
}

// EvaluateAll evaluates the rules and the SLOs; the summary counts both.
func (p RulesAndSLOs) EvaluateAll(ctx context.Context, now time.Time) (PassSummary, error) {
	if p.SLOs == nil {
		return p.RuleEvaluator.EvaluateAll(ctx, now)
	}
	var sum PassSummary
	var ssum SLOPassSummary
	var errs []error
	var serr error
	ran, err := p.store.WithPassLock(ctx, func(ctx context.Context) error {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			ssum, serr = p.SLOs.EvaluateAll(ctx, now)
		}()
		err := p.pass(ctx, now, &sum, &errs)
		wg.Wait()
		return err
	})
	// A pass that could not take the lock (the database unavailable) is
	// a failed pass, not one skipped for another instance's.
	sum.Skipped = !ran && err == nil
	sum.SLOs, sum.SLOAlerts = ssum.SLOs, ssum.Alerted
	sum.Failed += ssum.Failed
	return sum, errors.Join(err, errors.Join(errs...), serr)
}
