package postgres

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// FireMeasured applies the ok -> firing transition the evaluator decides
// for r as it was loaded, measured at value: tests use it to write a
// transition computed before a concurrent change of the rule.
func (e *Evaluator) FireMeasured(ctx context.Context, accountID string, r alerting.Rule, value float64, now time.Time) (bool, error) {
	c := change{rule: &evalRule{Rule: r, AccountID: accountID}, value: value, hasValue: true, next: alerting.StateFiring, fired: true}
	return e.apply(ctx, c, now)
}
