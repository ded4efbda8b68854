package alerting

import "time"

// History event kinds: a rule's transitions, as GET
// /v1/rules/{ruleId}/events lists them.
const (
	EventFired    = "fired"
	EventResolved = "resolved"
)

// RuleEvent is one transition in a rule's history.
type RuleEvent struct {
	ID string `json:"id"`
	// Kind is EventFired or EventResolved.
	Kind string `json:"kind"`
	// Value is what the evaluation measured (the ratio, with a baseline);
	// nil when it had no value.
	Value *float64 `json:"value"`
	// Threshold is the rule's threshold at that moment.
	Threshold float64 `json:"threshold"`
	// Reason says why a firing ended without an evaluation resolving it:
	// EndRedefined, EndDisabled or EndDeleted; nil otherwise.
	Reason *string   `json:"reason"`
	At     time.Time `json:"at"`
	// Expected is the band a seasonal rule judged with; nil for other
	// rules.
	Expected *Band `json:"expected"`
}

// RuleEventPage is the body of GET /v1/rules/{ruleId}/events, newest first.
// Items is never nil; NextCursor is nil on the last page.
type RuleEventPage struct {
	Items      []RuleEvent `json:"items"`
	NextCursor *string     `json:"next_cursor"`
}

// RuleEventFilter selects a page of a rule's history.
type RuleEventFilter struct {
	Limit  int
	Cursor string
}

// Validate puts the default limit in place of 0 and checks it (EINVALID on
// query.limit).
func (f *RuleEventFilter) Validate() error {
	return checkLimit(&f.Limit)
}
