package alerting

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// The burn windows' lengths as the SLI reads take them: the short ones
// in minutes (from events), the 3-day one in hours (from the hourly
// rollups, like the SLO's own window).
var (
	sloMinutes = []int{5, 30, 60, 360}
	sloHours   = []int{72}
)

// SLIQuery is the indicator read of the SLO.
func (s SLO) SLIQuery() analytics.SLIQuery {
	q := analytics.SLIQuery{MCPID: s.MCPID, ErrorKinds: s.ErrorKinds, WindowDays: s.WindowDays}
	if s.Tool != nil {
		q.Tool = *s.Tool
	}
	if s.ThresholdMs != nil {
		q.ThresholdMs = *s.ThresholdMs
	}
	return q
}

// SLOFigures is what an SLO's indicator says at one moment.
type SLOFigures struct {
	// SLI is the good fraction over the SLO's window; nil without items.
	SLI         *float64           `json:"sli"`
	ErrorBudget ErrorBudget        `json:"error_budget"`
	BurnRates   map[string]float64 `json:"burn_rates"`
	// Alert is the state the burn rates call for: ok, ticket or page.
	Alert string `json:"-"`
	// BudgetLastsHours is how long the remaining budget lasts at the
	// burn rate of the alert's long window (the last hour's when ok);
	// nil when nothing burns.
	BudgetLastsHours *float64 `json:"budget_lasts_hours"`
	// Condition is the burn condition that decided, e.g. "1h and 5m burn
	// rates above 14.4"; "" when ok.
	Condition string `json:"-"`
	long      string
}

// Figures computes an SLO's figures from its indicator's counts.
func (s SLO) Figures(rd analytics.SLIReading) SLOFigures {
	windows := map[string]Events{
		Burn5m: events(rd.Minutes[5]), Burn30m: events(rd.Minutes[30]), Burn1h: events(rd.Minutes[60]),
		Burn6h: events(rd.Minutes[360]), Burn3d: events(rd.Hours[72]),
	}
	whole := events(rd.Hours[s.WindowDays*24])
	f := SLOFigures{ErrorBudget: Budget(whole, s.Objective), BurnRates: BurnRates(windows, s.Objective)}
	if math.IsInf(f.ErrorBudget.Remaining, 0) {
		f.ErrorBudget.Remaining = -1
	}
	if whole.Total > 0 {
		sli := 1 - float64(whole.Bad)/float64(whole.Total)
		f.SLI = &sli
	}
	state, alert := BurnState(f.BurnRates)
	f.Alert, f.long = state, Burn1h
	if alert != nil {
		f.long = alert.Long
		f.Condition = alert.Long + " and " + alert.Short + " burn rates above " + formatNumber(alert.Factor, 1)
	}
	if d, ok := BudgetLasts(f.ErrorBudget.Remaining, f.BurnRates[f.long], s.Window()); ok {
		h := d.Hours()
		f.BudgetLastsHours = &h
	}
	return f
}

func events(c analytics.SLICounts) Events { return Events{Total: c.Total, Bad: c.Bad} }

// SLOStatus is an SLO with its figures now: the body of every SLO read.
type SLOStatus struct {
	SLO
	SLOFigures
	// Series is the daily indicator over the window (GET of one SLO only;
	// empty in lists).
	Series []SLOPoint `json:"series"`
}

// SLOPoint is one day of an SLO's series.
type SLOPoint struct {
	Day   time.Time `json:"day"`
	Total int64     `json:"total"`
	Bad   int64     `json:"bad"`
	// SLI is the day's good fraction; nil without items.
	SLI *float64 `json:"sli"`
	// BurnRate is the day's burn rate (1: spending exactly the budget).
	BurnRate float64 `json:"burn_rate"`
}

// Points turns an indicator's daily series into the SLO's.
func (s SLO) Points(series []analytics.SLIPoint) []SLOPoint {
	out := make([]SLOPoint, len(series))
	for i, p := range series {
		out[i] = SLOPoint{Day: p.Day.UTC(), Total: p.Total, Bad: p.Bad, BurnRate: BurnRate(Events{Total: p.Total, Bad: p.Bad}, s.Objective)}
		if p.Total > 0 {
			v := 1 - float64(p.Bad)/float64(p.Total)
			out[i].SLI = &v
		}
	}
	return out
}

// severity orders the alert states.
func severity(state string) int {
	switch state {
	case SLOStatePage:
		return 2
	case SLOStateTicket:
		return 1
	}
	return 0
}

// SLOChange is an alert-state change of an SLO an evaluation applies.
type SLOChange struct {
	Next string
	At   time.Time
	// Alerted: the change raises the state to one that notifies
	// (SLO.Notifies); Resolved: back to ok from a state that notified;
	// Renotify: no change of state, the alert delivered again
	// (renotify_minutes; Alerted is set too).
	Alerted, Resolved, Renotify bool
	Figures                     SLOFigures
}

// SLOEvalStore is the storage of the SLO pass. TransitionSLO is
// conditional like a rule's: it changes the SLO only while it is enabled,
// in s.State and defined as s, records the history event and inserts the
// deliveries plan returns (none while snoozed) in one transaction.
type SLOEvalStore interface {
	EnabledSLOs(ctx context.Context) ([]EvalSLO, error)
	TransitionSLO(ctx context.Context, s EvalSLO, c SLOChange, plan func(s SLO, audience []Member, connected map[string]bool) []PlannedDelivery) (bool, int, error)
}

// EvalSLO is an SLO with its account.
type EvalSLO struct {
	SLO
	AccountID string
}

// SLOEvaluator evaluates every enabled SLO in one read of their
// indicators (analytics.SLIReader: rollups and window reads, never the raw
// events of a whole window), beside the rule pass.
type SLOEvaluator struct {
	Store SLOEvalStore
	SLI   analytics.SLIReader
	// ChunkSLOs bounds the SLOs one read measures; default 10,000 (the
	// read names their MCPs in its statements, each once, and cuts them
	// into statements of bounded size itself). Every chunk's statements
	// read the same rollup parts, so fewer, larger chunks cost less.
	ChunkSLOs int
}

// SLOPassSummary counts what one SLO pass did.
type SLOPassSummary struct {
	SLOs, Alerted, Renotified, Resolved, Changed, Failed int
}

// EvaluateAll evaluates every enabled SLO at now.
func (e *SLOEvaluator) EvaluateAll(ctx context.Context, now time.Time) (SLOPassSummary, error) {
	var sum SLOPassSummary
	slos, err := e.Store.EnabledSLOs(ctx)
	if err != nil {
		return sum, err
	}
	sum.SLOs = len(slos)
	chunk := e.ChunkSLOs
	if chunk <= 0 {
		chunk = 10000
	}
	var errs []error
	for start := 0; start < len(slos); start += chunk {
		part := slos[start:min(len(slos), start+chunk)]
		qs := make([]analytics.SLIQuery, len(part))
		for i, s := range part {
			qs[i] = s.SLIQuery()
		}
		rds, err := e.SLI.SLICounts(ctx, now, sloMinutes, sloHours, qs)
		if err != nil {
			sum.Failed += len(part)
			errs = append(errs, fmt.Errorf("SLO indicators: %w", err))
			continue
		}
		for i := range part {
			c, ok := sloChange(part[i].SLO, rds[i], now)
			if !ok {
				continue
			}
			applied, _, err := e.Store.TransitionSLO(ctx, part[i], c, PlanSLOTransition(c, now))
			switch {
			case err != nil:
				sum.Failed++
				errs = append(errs, fmt.Errorf("SLO %s: %w", part[i].ID, err))
			case applied && c.Renotify:
				sum.Renotified++
			case applied && c.Alerted:
				sum.Alerted++
			case applied && c.Resolved:
				sum.Resolved++
			case applied:
				sum.Changed++
			}
		}
	}
	return sum, errors.Join(errs...)
}

// sloChange decides whether an evaluation changes the SLO's alert state.
func sloChange(s SLO, rd analytics.SLIReading, now time.Time) (SLOChange, bool) {
	f := s.Figures(rd)
	if f.Alert == s.State {
		if s.RenotifyDue(now) {
			return SLOChange{Next: s.State, At: now, Figures: f, Alerted: true, Renotify: true}, true
		}
		return SLOChange{}, false
	}
	c := SLOChange{Next: f.Alert, At: now, Figures: f}
	c.Alerted = severity(f.Alert) > severity(s.State) && s.Notifies(f.Alert)
	c.Resolved = f.Alert == SLOStateOK && s.Notifies(s.State)
	return c, true
}

// RenotifyDue reports whether an SLO that stays in its state is due for
// a re-notification at now: the state notifies, the SLO is not snoozed,
// and renotify_minutes have passed since its last alert (raised or
// re-notified).
func (s SLO) RenotifyDue(now time.Time) bool {
	return s.RenotifyMinutes != nil && s.Notifies(s.State) && s.LastAlertAt != nil && !s.Snoozed(now) &&
		!now.Before(s.LastAlertAt.Add(time.Duration(*s.RenotifyMinutes)*time.Minute))
}

// PlanSLOTransition plans the deliveries of an SLO's change, as the SLO is
// stored when it is applied: none while snoozed; an alert on a raise to a
// notifying state; a resolve notice back to ok with notify_on_resolve.
func PlanSLOTransition(c SLOChange, now time.Time) func(s SLO, audience []Member, connected map[string]bool) []PlannedDelivery {
	return func(s SLO, audience []Member, connected map[string]bool) []PlannedDelivery {
		r := Rule{ID: s.ID, MCPID: s.MCPID, Name: s.Name, Channels: s.Channels}
		switch {
		case s.Snoozed(now):
			return nil
		case c.Renotify:
			return planDeliveries(r, KindFiring, SLOStillTitle(s, c.Next, c.Figures), SLOAlertBody(s, c.Next, c.Figures), SLOBudgetText(s, c.Figures)+", still burning", audience, connected)
		case c.Alerted:
			return planDeliveries(r, KindFiring, SLOAlertTitle(s, c.Next, c.Figures), SLOAlertBody(s, c.Next, c.Figures), SLOBudgetText(s, c.Figures), audience, connected)
		case c.Resolved && s.NotifyOnResolve:
			return planDeliveries(r, KindResolved, "Resolved: "+s.Name+" (budget burn back to normal)",
				s.ObjectiveText()+": the error budget no longer burns fast enough to alert. "+SLOBudgetText(s, c.Figures)+".", SLOBudgetText(s, c.Figures), audience, connected)
		}
		return nil
	}
}

// ObjectiveText states the objective, e.g. "99.5% of search calls succeed
// over 28 days".
func (s SLO) ObjectiveText() string {
	what := "calls"
	if s.Tool != nil {
		what = *s.Tool + " calls"
	}
	verb := "succeed"
	if s.Kind == SLOLatency && s.ThresholdMs != nil {
		verb = "answer within " + formatNumber(*s.ThresholdMs, 1) + " ms"
	}
	return formatNumber(s.Objective*100, 3) + "% of " + what + " " + verb + " over " + strconv.Itoa(s.WindowDays) + " days"
}

// SLOAlertTitle titles an SLO alert, e.g. "Page: Search availability
// (83% of the error budget left)".
func SLOAlertTitle(s SLO, state string, f SLOFigures) string {
	word := "Ticket"
	if state == SLOStatePage {
		word = "Page"
	}
	return word + ": " + s.Name + " (" + budgetLeft(f) + ")"
}

// SLOStillTitle titles a re-notification, e.g. "Still paging: Search
// availability (41% of the error budget left)".
func SLOStillTitle(s SLO, state string, f SLOFigures) string {
	word := "Still ticketed"
	if state == SLOStatePage {
		word = "Still paging"
	}
	return word + ": " + s.Name + " (" + budgetLeft(f) + ")"
}

// SLOAlertBody says why the SLO alerts and how much budget is left and
// how long it lasts at this rate.
func SLOAlertBody(s SLO, state string, f SLOFigures) string {
	return "Objective: " + s.ObjectiveText() + ". The error budget is burning " + formatNumber(f.BurnRates[f.long], 1) +
		"x faster than the objective allows over the last " + f.long + " (" + state + ": " + f.Condition + "). " + SLOBudgetText(s, f) + "."
}

// SLOBudgetText is how much budget is left and how long it lasts, e.g.
// "83% of the error budget left, gone in 1 day 2 hours at this rate".
func SLOBudgetText(s SLO, f SLOFigures) string {
	out := budgetLeft(f)
	if f.BudgetLastsHours != nil && f.ErrorBudget.Remaining > 0 {
		out += ", " + lastsText(*f.BudgetLastsHours) + " at this rate"
	}
	return out
}

func budgetLeft(f SLOFigures) string {
	if f.ErrorBudget.Remaining <= 0 {
		return "error budget spent"
	}
	return formatNumber(f.ErrorBudget.Remaining*100, 1) + "% of the error budget left"
}

func lastsText(hours float64) string {
	switch {
	case hours <= 0:
		return "already spent"
	case hours < 1:
		return "gone in " + strconv.Itoa(max(1, int(hours*60))) + " minutes"
	case hours < 48:
		return "gone in " + formatNumber(hours, 1) + " hours"
	}
	return "gone in " + formatNumber(hours/24, 1) + " days"
}

// SLOMinutes are the burn windows read from events, in minutes.
func SLOMinutes() []int { return append([]int(nil), sloMinutes...) }

// SLOHours are the burn windows read from the hourly rollups, in hours.
func SLOHours() []int { return append([]int(nil), sloHours...) }
