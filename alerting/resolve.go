package alerting

import "time"

// PlanResolve decides the deliveries of a resolve (firing → ok) of rule at
// now: with notify_on_resolve and not snoozed, PlanResolveFanOut; in any
// case a resolve on each team channel that resolves always
// (Integration.ResolvesAlways: PagerDuty), snoozed or not, because the
// firing opened an incident there that nothing else would close. A
// resolve of an incident the snooze kept from opening is harmless: the
// provider ignores a resolve of an unknown key.
func PlanResolve(rule Rule, rd Reading, now time.Time, audience []Member, connected map[string]bool) []PlannedDelivery {
	all := PlanResolveFanOut(rule, rd.Value, rd.HasValue, audience, connected)
	if rule.NotifyOnResolve && !rule.Snoozed(now) {
		return all
	}
	return onlyResolvingAlways(all)
}

// PlanEnded decides the resolve notices of a firing rule that an admin
// redefined, disabled or deleted (reason): PlanEndedFanOut with
// notify_on_resolve and not snoozed, and in any case on the channels that
// resolve always (PlanResolve). Nothing for a rule that is not firing.
func PlanEnded(rule Rule, reason string, now time.Time, audience []Member, connected map[string]bool) []PlannedDelivery {
	if rule.State != StateFiring {
		return nil
	}
	all := PlanEndedFanOut(rule, reason, audience, connected)
	if rule.NotifyOnResolve && !rule.Snoozed(now) {
		return all
	}
	return onlyResolvingAlways(all)
}

func onlyResolvingAlways(plan []PlannedDelivery) []PlannedDelivery {
	var out []PlannedDelivery
	for _, d := range plan {
		if ResolvesAlways(d.Channel) {
			out = append(out, d)
		}
	}
	return out
}

// HearsResolves reports whether a resolve of r creates any delivery at
// all: it has notify_on_resolve, or names a channel that resolves always.
func (r Rule) HearsResolves() bool {
	if r.NotifyOnResolve {
		return true
	}
	for _, ch := range r.Channels {
		if ResolvesAlways(ch) {
			return true
		}
	}
	return false
}
