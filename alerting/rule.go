package alerting

import (
	"context"
	"time"
)

// Rule metrics: what a rule measures over its window, with the meaning the
// metric reads give them (contract, Metric reads).
const (
	MetricErrorRate = "error_rate" // errors / calls, a fraction in [0, 1]; 0 when there are no calls
	MetricErrors    = "errors"     // items with status error
	MetricCalls     = "calls"      // every item (any method; tools/call only when the rule names a tool)
	MetricP95       = "p95_ms"     // 95th percentile duration_ms; no value when no item carries one
	MetricP50       = "p50_ms"     // median duration_ms; no value when no item carries one
	MetricP99       = "p99_ms"     // 99th percentile duration_ms; no value when no item carries one
	MetricSessions  = "sessions"   // distinct session_ids
	MetricUsers     = "users"      // distinct user_ids, falling back to session_id (as the metric reads count users)
	// MetricToolChanges counts the MCP's tool inventory changes (added,
	// removed, changed; those of the named tool only when the rule names
	// one), from analytics.ToolChangeCounter (docs/inventory.md).
	MetricToolChanges = "tool_changes"
	// MetricUnknownToolCalls counts the items with error_kind unknown_tool
	// and the tools/call items of names the inventory did not list, from
	// analytics.UnknownToolCounter (docs/failures.md); a rule naming a
	// tool counts that name's.
	MetricUnknownToolCalls = "unknown_tool_calls"
	// MetricRepeatedCalls counts the tool calls that repeated their
	// session's previous call (same tool and args_hash), from
	// analytics.RepeatCounter.
	MetricRepeatedCalls = "repeated_calls"
)

// Baselines a rule may compare against. With a baseline the value compared
// with the threshold is the window's figure divided by the baseline's.
const (
	// BaselineWeekAgo is the same window seven days earlier.
	BaselineWeekAgo = "week_ago"
	// BaselineOffset is how far back the week_ago window lies.
	BaselineOffset = 7 * 24 * time.Hour
)

// Comparators a rule compares its metric with.
const (
	CompGT = ">"
	CompGE = ">="
	CompLT = "<"
	CompLE = "<="
)

// Rule states. A rule fires on ok → firing and resolves on firing → ok.
const (
	StateOK     = "ok"
	StateFiring = "firing"
)

// Limits of a rule's fields.
const (
	MaxRuleNameLen   = 200
	MaxRuleToolLen   = 256 // same as an ingest item's name
	MinWindowMinutes = 1
	MaxWindowMinutes = 1440
	// MaxMinCalls bounds min_calls (a PostgreSQL integer).
	MaxMinCalls = 1_000_000_000
	// MinRenotifyMinutes and MaxRenotifyMinutes bound renotify_minutes
	// (five minutes to a week).
	MinRenotifyMinutes = 5
	MaxRenotifyMinutes = 10080
	// MaxRulesPerAccount is the default cap on an account's rules
	// (configurable); past it CreateRule fails with ELIMITREACHED.
	MaxRulesPerAccount = 1000
)

var (
	metrics = []string{MetricErrorRate, MetricErrors, MetricCalls, MetricP95, MetricP50, MetricP99, MetricSessions, MetricUsers, MetricToolChanges,
		MetricProbeDown, MetricUnknownToolCalls, MetricRepeatedCalls}
	// guarded are the metrics min_calls applies to: rates, error counts and
	// latencies, which a handful of calls makes noisy. Volume metrics
	// (calls, sessions, users) are what min_calls counts, so it does not
	// apply to them.
	guarded     = []string{MetricErrorRate, MetricErrors, MetricP95, MetricP50, MetricP99}
	comparators = []string{CompGT, CompGE, CompLT, CompLE}
)

// Rule is an alert rule on one MCP, as every rule route returns it.
type Rule struct {
	ID    string `json:"id"`
	MCPID string `json:"mcp_id"`
	Name  string `json:"name"`
	// Metric is one of the Metric* constants.
	Metric string `json:"metric"`
	// Tool restricts the rule to the tools/call items of one tool; nil means
	// every item of the MCP.
	Tool          *string  `json:"tool"`
	Comparator    string   `json:"comparator"`
	Threshold     float64  `json:"threshold"`
	WindowMinutes int      `json:"window_minutes"`
	Channels      []string `json:"channels"`
	Enabled       bool     `json:"enabled"`
	// State is StateOK or StateFiring.
	State       string     `json:"state"`
	LastFiredAt *time.Time `json:"last_fired_at"`
	CreatedAt   time.Time  `json:"created_at"`
	// NotifyOnResolve asks for deliveries on firing → ok too, to the same
	// audience as a firing.
	NotifyOnResolve bool `json:"notify_on_resolve"`
	// SnoozedUntil, while in the future, keeps the rule's transitions from
	// creating deliveries (the rule still evaluates and changes state);
	// nil when not snoozed. A snooze in the past reads as nil. A rule
	// that fired while snoozed and still fires when the snooze ends
	// notifies then, once (SnoozeEnded).
	SnoozedUntil *time.Time `json:"snoozed_until"`
	// MinCalls: for the guarded metrics, a window with fewer calls cannot
	// judge the rule: it keeps its state (a firing rule neither resolves
	// nor fires again on a quiet window).
	MinCalls int `json:"min_calls"`
	// Baseline is nil, BaselineWeekAgo or BaselineSeasonal.
	Baseline *string `json:"baseline"`
	// Sensitivity is the band width of a seasonal rule (Sensitivity*
	// constants); nil for other rules.
	Sensitivity *string `json:"sensitivity"`
	// RenotifyMinutes, while the rule is firing, delivers again every so
	// many minutes (at least MinRenotifyMinutes); nil never.
	RenotifyMinutes *int `json:"renotify_minutes"`
	// Severity is one of the Severity* constants (SeverityError by
	// default): shown in every message, PagerDuty's event severity.
	Severity string `json:"severity"`
	// ErrorKind, for a rule on errors or error_rate, counts only the
	// errors of that kind (analytics.ErrorKinds); nil counts every error.
	ErrorKind *string `json:"error_kind"`
	// MinSeverity, for a rule on tool_changes, counts only the changes at
	// least that severe (breaking, risky, benign; docs/tool-changes.md);
	// nil counts every change.
	MinSeverity *string `json:"min_severity"`
}

// Snoozed reports whether the rule's deliveries are muted at now.
func (r Rule) Snoozed(now time.Time) bool {
	return r.SnoozedUntil != nil && now.Before(*r.SnoozedUntil)
}

// SnoozeEnded reports whether an evaluation at now whose reading rd keeps
// the rule firing owes its audience the notice of a firing its snooze
// muted: the rule is firing and still breached (a reading that holds does
// not count), its snooze has ended by now, and it last fired before the
// snooze ended. The store sends the notice only when that firing created
// no deliveries (it came while snoozed, not before the snooze began), and
// only once: it clears the ended snooze in the same transaction
// (EvaluationStore.SnoozeEnded).
func (r Rule) SnoozeEnded(now time.Time, rd Reading) bool {
	return r.State == StateFiring && rd.Breached && !rd.Hold && r.SnoozedUntil != nil && !r.Snoozed(now) &&
		r.LastFiredAt != nil && r.LastFiredAt.Before(*r.SnoozedUntil)
}

// ClearExpiredSnooze drops a snooze that has ended by now, so that a rule
// reads as not snoozed once its snooze is over.
func (r *Rule) ClearExpiredSnooze(now time.Time) {
	if r.SnoozedUntil != nil && !r.Snoozed(now) {
		r.SnoozedUntil = nil
	}
}

// Detailed reports whether the rule's metric needs the costly part of a
// window read: percentiles and distinct counts.
func (r Rule) Detailed() bool {
	switch r.Metric {
	case MetricP50, MetricP95, MetricP99, MetricSessions, MetricUsers:
		return true
	}
	return false
}

// Window returns the time range the rule measures when evaluated at now: the
// last WindowMinutes minutes, ending at now.
func (r Rule) Window(now time.Time) (from, to time.Time) {
	return now.Add(-time.Duration(r.WindowMinutes) * time.Minute), now
}

// RuleService manages alert rules.
type RuleService interface {
	// CreateRule validates c and stores a new rule in state ok. Returns
	// EINVALID, ENOTFOUND (no such MCP in the account) and ELIMITREACHED
	// (the account holds its maximum of rules).
	CreateRule(ctx context.Context, accountID, mcpID string, c RuleCreate) (Rule, error)

	// Rule returns one rule. Returns ENOTFOUND.
	Rule(ctx context.Context, accountID, ruleID string) (Rule, error)

	// Rules returns the MCP's rules, oldest first. Returns ENOTFOUND (no such
	// MCP in the account).
	Rules(ctx context.Context, accountID, mcpID string) ([]Rule, error)

	// UpdateRule applies upd (RuleUpdate.Apply, including its state reset)
	// and returns the whole rule. Returns ENOTFOUND and EINVALID.
	UpdateRule(ctx context.Context, accountID, ruleID string, upd RuleUpdate) (Rule, error)

	// DeleteRule removes a rule and its history; its deliveries stay.
	// Returns ENOTFOUND.
	DeleteRule(ctx context.Context, accountID, ruleID string) error

	// RuleEvents returns a page of the rule's history, newest first. Call
	// f.Validate first. Returns ENOTFOUND, and EBADREQUEST for a malformed
	// cursor (ParseDeliveryCursor).
	RuleEvents(ctx context.Context, accountID, ruleID string, f RuleEventFilter) (RuleEventPage, error)
}
