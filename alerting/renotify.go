package alerting

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// RenotifyStore finds firing rules due for a re-notification.
type RenotifyStore interface {
	// Renotify makes the deliveries of every enabled, firing, unsnoozed
	// rule whose renotify_minutes have passed since it fired or was last
	// re-notified (PlanRenotifyFanOut, with the value it fired on), marks
	// it re-notified at now, and returns how many rules it re-notified.
	// Rules are locked as they are taken, so two instances do not both
	// re-notify one.
	Renotify(ctx context.Context, now time.Time) (int, error)
}

// PlanRenotifyFanOut decides the deliveries of a rule that is still
// firing: PlanFanOut's audience, titled "Still firing: …".
func PlanRenotifyFanOut(rule Rule, value float64, audience []Member, connected map[string]bool) []PlannedDelivery {
	return withValue(planDeliveries(rule, KindFiring, "Still firing: "+rule.Name+" ("+rule.valueText(value)+")", FiringBody(rule, value),
		rule.valueText(value)+" "+rule.ruleText()+", still firing", audience, connected), &value)
}

// RenotifyPass is one pass re-notifying the due rules, for a background
// job (cmd/telemetryd runs it every minute at most).
func RenotifyPass(s RenotifyStore, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := s.Renotify(ctx, time.Now())
		if err != nil {
			return fmt.Errorf("re-notifying firing rules: %w", err)
		}
		if n > 0 {
			log.Info("re-notified firing rules", "rules", n)
		}
		return nil
	}
}
