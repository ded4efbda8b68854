package alerting

import (
	"context"
	"time"
)

// SLO history event kinds, as GET /v1/slos/{sloId}/events lists them.
const (
	SLOEventPaged      = "page"       // raised (or fallen) to page
	SLOEventTicketed   = "ticket"     // raised (or fallen) to ticket
	SLOEventResolved   = "resolved"   // back to ok
	SLOEventRenotified = "renotified" // still in its state, alert delivered again
)

// SLOEvent is one entry of an SLO's history: a change of its alert state
// or a re-notification, with the figures it was made on.
type SLOEvent struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// State is the SLO's state after the event: ok, ticket or page.
	State           string             `json:"state"`
	BudgetRemaining float64            `json:"budget_remaining"`
	BurnRates       map[string]float64 `json:"burn_rates"`
	At              time.Time          `json:"at"`
}

// SLOEventKind names an event from its state and whether it was a
// re-notification.
func SLOEventKind(state string, renotify bool) string {
	switch {
	case renotify:
		return SLOEventRenotified
	case state == SLOStateOK:
		return SLOEventResolved
	}
	return state
}

// SLOEventPage is the body of GET /v1/slos/{sloId}/events, newest first.
// Items is never nil; NextCursor is nil on the last page.
type SLOEventPage struct {
	Items      []SLOEvent `json:"items"`
	NextCursor *string    `json:"next_cursor"`
}

// SLOHistory reads SLOs' histories.
type SLOHistory interface {
	// SLOEvents returns a page of the SLO's history (f as for rules).
	// Returns ENOTFOUND and EINVALID (cursor).
	SLOEvents(ctx context.Context, accountID, sloID string, f RuleEventFilter) (SLOEventPage, error)
}
