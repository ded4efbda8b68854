package alerting

import (
	"math"
	"time"
)

// Burn-rate alerting for service level objectives, after the multiwindow,
// multi-burn-rate alerts of Google's SRE Workbook ("Alerting on SLOs",
// table 5-8): a burn rate is how many times faster than "exactly on budget"
// the error budget is being spent. At a burn rate of 1 the budget lasts
// exactly the SLO's window; at 14.4 a 30-day budget loses 2% in one hour.
//
// Each alert pairs a long window (is the burn sustained?) with a short one
// (is it still happening?), so that an alert resets soon after the burn
// stops instead of waiting for the long window to forget it.

// Burn-rate windows, keyed as the SLO read's burn_rates map is.
const (
	Burn5m  = "5m"
	Burn30m = "30m"
	Burn1h  = "1h"
	Burn6h  = "6h"
	Burn3d  = "3d"
)

// BurnWindows lists the windows an SLO's burn rates are read over, with
// their lengths.
var BurnWindows = []struct {
	Key    string
	Length time.Duration
}{
	{Burn5m, 5 * time.Minute},
	{Burn30m, 30 * time.Minute},
	{Burn1h, time.Hour},
	{Burn6h, 6 * time.Hour},
	{Burn3d, 72 * time.Hour},
}

// SLO states: ok, a ticket (a slow burn someone should look at this week),
// a page (a fast burn someone must look at now).
const (
	SLOStateOK     = "ok"
	SLOStateTicket = "ticket"
	SLOStatePage   = "page"
)

// BurnAlert is one of the Workbook's alert conditions: it holds when both
// windows burn faster than Factor.
type BurnAlert struct {
	Long, Short string
	Factor      float64
	State       string
}

// BurnAlerts are the Workbook's defaults for a 30-day (here: any window)
// objective, in the order they are tried:
//   - page: 1 h and 5 min above 14.4 (2% of the budget in one hour),
//   - page: 6 h and 30 min above 6 (5% of the budget in six hours),
//   - ticket: 3 d and 6 h above 1 (10% of the budget in three days).
var BurnAlerts = []BurnAlert{
	{Long: Burn1h, Short: Burn5m, Factor: 14.4, State: SLOStatePage},
	{Long: Burn6h, Short: Burn30m, Factor: 6, State: SLOStatePage},
	{Long: Burn3d, Short: Burn6h, Factor: 1, State: SLOStateTicket},
}

// Events counts an SLI's events over a window: all of them, and those that
// were bad (an error of a counted kind, or slower than the threshold).
type Events struct {
	Total int64
	Bad   int64
}

// BurnRate is the window's bad fraction divided by the error budget's
// fraction (1 - objective). A window without events burns nothing.
func BurnRate(ev Events, objective float64) float64 {
	if ev.Total <= 0 || objective >= 1 {
		return 0
	}
	bad := float64(ev.Bad) / float64(ev.Total)
	return bad / (1 - objective)
}

// BurnRates computes the burn rate of every window in BurnWindows.
func BurnRates(windows map[string]Events, objective float64) map[string]float64 {
	out := make(map[string]float64, len(BurnWindows))
	for _, w := range BurnWindows {
		out[w.Key] = BurnRate(windows[w.Key], objective)
	}
	return out
}

// BurnState judges burn rates against BurnAlerts: page when a page
// condition holds, else ticket when a ticket condition holds, else ok.
// It also returns the condition that decided (nil for ok).
func BurnState(rates map[string]float64) (string, *BurnAlert) {
	var ticket *BurnAlert
	for i := range BurnAlerts {
		a := &BurnAlerts[i]
		if rates[a.Long] > a.Factor && rates[a.Short] > a.Factor {
			if a.State == SLOStatePage {
				return SLOStatePage, a
			}
			if ticket == nil {
				ticket = a
			}
		}
	}
	if ticket != nil {
		return SLOStateTicket, ticket
	}
	return SLOStateOK, nil
}

// ErrorBudget is an SLO's budget over its window, in events: Total is how
// many bad events the objective allows given the window's events, Spent how
// many there were, Remaining the fraction of Total still unspent (negative
// once overspent; 1 over a window without events).
type ErrorBudget struct {
	Total     float64 `json:"total"`
	Spent     float64 `json:"spent"`
	Remaining float64 `json:"remaining"`
}

// Budget computes the error budget of a window's events under objective.
func Budget(ev Events, objective float64) ErrorBudget {
	total := float64(ev.Total) * (1 - objective)
	b := ErrorBudget{Total: total, Spent: float64(ev.Bad), Remaining: 1}
	if total > 0 {
		b.Remaining = 1 - b.Spent/total
	} else if ev.Bad > 0 {
		b.Remaining = math.Inf(-1)
	}
	return b
}

// BudgetLasts is how long the remaining budget lasts at burn rate: at a
// burn rate of 1 the whole budget lasts the SLO's window, so a fraction r
// of it lasts r × window / rate. It returns false when nothing is burning
// (the budget lasts indefinitely) and 0 when it is already spent.
func BudgetLasts(remaining, rate float64, window time.Duration) (time.Duration, bool) {
	if rate <= 0 {
		return 0, false
	}
	if remaining <= 0 {
		return 0, true
	}
	return time.Duration(remaining / rate * float64(window)), true
}
