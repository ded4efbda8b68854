package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
)

// withProbeNote adds the probe note of the rule's MCP, read now in tx, to
// a re-notification's deliveries (rules whose messages carry one).
func withProbeNote(ctx context.Context, tx pgx.Tx, rule alerting.Rule, plan []alerting.PlannedDelivery, now time.Time) ([]alerting.PlannedDelivery, error) {
	if !alerting.WantsProbeNote(rule) {
		return plan, nil
	}
	stats, err := probeStats(ctx, tx, []string{rule.MCPID})
	if err != nil {
		return nil, err
	}
	st, ok := stats[rule.MCPID]
	if !ok {
		return plan, nil
	}
	return alerting.WithProbeNote(plan, &st, now), nil
}
