package alerting

import (
	"context"
	"errors"
	"time"
)

// RulesAndSLOs is the evaluator pass of the service: the rules, then, by
// the instance that ran them (not one that found another instance's pass
// under way), the SLOs. EvaluateRule is the rules evaluator's.
type RulesAndSLOs struct {
	*RuleEvaluator
	SLOs *SLOEvaluator
}

// EvaluateAll evaluates the rules, then the SLOs; the summary counts both.
func (p RulesAndSLOs) EvaluateAll(ctx context.Context, now time.Time) (PassSummary, error) {
	sum, err := p.RuleEvaluator.EvaluateAll(ctx, now)
	if sum.Skipped || p.SLOs == nil {
		return sum, err
	}
	ssum, serr := p.SLOs.EvaluateAll(ctx, now)
	sum.SLOs, sum.SLOAlerts = ssum.SLOs, ssum.Alerted
	sum.Failed += ssum.Failed
	return sum, errors.Join(err, serr)
}
