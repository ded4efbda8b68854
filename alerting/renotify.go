package alerting

import (
	"context"
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
	return planDeliveries(rule, KindFiring, "Still firing: "+rule.Name+" ("+rule.valueText(value)+")", FiringBody(rule, value),
		rule.valueText(value)+" "+rule.ruleText()+", still firing", audience, connected)
}

// RunRenotify re-notifies due rules every interval until ctx ends.
func RunRenotify(ctx context.Context, s RenotifyStore, interval time.Duration, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		n, err := s.Renotify(ctx, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("re-notifying firing rules failed", "error", err)
		case n > 0:
			log.Info("re-notified firing rules", "rules", n)
		}
	}
}
