package alerting

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mcpscope/telemetry"
)

// Delivery statuses. in_app deliveries are delivered at once; email and
// team-chat deliveries are queued, then sent or failed by the outbox once
// sending is configured (StatusSent, StatusFailed; docs/delivery.md).
// Clients must tolerate unknown values.
const (
	StatusDelivered = "delivered"
	StatusQueued    = "queued"
)

// Page sizes of the paginated delivery lists (inbox, notifications).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)

// Notification is an item of GET /v1/account/notifications: a delivery as
// the admins' log shows it, without what is the recipient's business (the
// body and the read marker).
type Notification struct {
	ID      string `json:"id"`
	RuleID  string `json:"rule_id"`
	MCPID   string `json:"mcp_id"`
	Channel string `json:"channel"`
	// RecipientUserID is the person of a personal-channel delivery; nil for a
	// team-chat delivery, which goes to the whole team.
	RecipientUserID *string `json:"recipient_user_id"`
	Status          string  `json:"status"`
	// Severity is the rule's severity when the delivery was made.
	Severity  string    `json:"severity"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
	// The outbox's record of a sending channel (docs/delivery.md):
	// attempts made, the last one, the next one while queued, the last
	// failure's short code (never a secret), when it was sent and the id
	// of the message it went out in (deliveries of one digest share it).
	Attempts      int        `json:"attempts"`
	LastAttemptAt *time.Time `json:"last_attempt_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastError     *string    `json:"last_error"`
	SentAt        *time.Time `json:"sent_at"`
	MessageID     *string    `json:"message_id"`
}

// UTC returns n with its times in UTC.
func (n Notification) UTC() Notification {
	n.CreatedAt = n.CreatedAt.UTC()
	for _, t := range []**time.Time{&n.LastAttemptAt, &n.NextAttemptAt, &n.SentAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return n
}

// Delivery is one record of a rule firing on one channel for one recipient:
// the delivery log behind both the inbox (in_app rows of one person) and the
// admins' notification log (its embedded Notification). Deliveries are
// created when a rule fires, never when they are read, and are not changed by
// later membership changes.
type Delivery struct {
	Notification
	Body   string     `json:"body"`
	ReadAt *time.Time `json:"read_at"`
}

// NotificationFilter selects a page of the delivery log. Empty Channel or
// Status means any.
type NotificationFilter struct {
	Channel  string
	Status   string
	Severity string
	Limit    int
	Cursor   string
}

// Validate checks the filter and puts the default limit in place of 0.
// Errors are EINVALID on the query parameter.
func (f *NotificationFilter) Validate() error {
	if f.Channel != "" && !ValidChannel(f.Channel) {
		return telemetry.FieldError(telemetry.EINVALID, "query.channel", "Unknown channel %q; the channels are %s.", f.Channel, strings.Join(ChannelIDs(), ", "))
	}
	if f.Severity != "" && !ValidSeverity(f.Severity) {
		return telemetry.FieldError(telemetry.EINVALID, "query.severity", "The severity must be critical, error, warning or info.")
	}
	switch f.Status {
	case "", StatusDelivered, StatusQueued, StatusSent, StatusFailed:
	default:
		return telemetry.FieldError(telemetry.EINVALID, "query.status", "The status must be delivered, queued, sent or failed.")
	}
	return checkLimit(&f.Limit)
}

// NotificationPage is the body of GET /v1/account/notifications. Items is
// never nil (an empty page encodes as []); NextCursor is nil on the last page.
type NotificationPage struct {
	Items      []Notification `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// Member is one person on the team when a rule fires, with their
// preferences in the rule's account.
type Member struct {
	UserID string
	Prefs  Preferences
}

// PlannedDelivery is a delivery PlanFanOut decided to create; the store adds
// ids, the rule and MCP, and the time.
type PlannedDelivery struct {
	// Kind is KindFiring or KindResolved.
	Kind            string
	Channel         string
	RecipientUserID *string // nil for team-chat channels
	Status          string
	Title           string
	Body            string
	// Summary is the measured value against the rule, e.g. "error rate
	// 7.03% > 5%", for subject lines.
	Summary string
	// Value is what was measured; nil when nothing was.
	Value *float64
}

// PlanFanOut decides the deliveries of one firing of rule, whose measured
// value was value, for the people on the team at that moment. It is the
// contract's fan-out, as a pure function:
//
//   - in_app (delivered) and email (queued) for each person whose
//     preferences allow the channel and whose rule names it;
//   - one queued delivery per team channel the rule names and connected
//     reports as connected;
//   - nothing, and no error, for a named team channel that is not connected.
//
// The order is stable: people in audience order (each person once, members
// without a user id skipped), personal channels in catalogue order, then team
// channels in catalogue order.
func PlanFanOut(rule Rule, value float64, audience []Member, connected map[string]bool) []PlannedDelivery {
	return withValue(planDeliveries(rule, KindFiring, FiringTitle(rule, value), FiringBody(rule, value), rule.valueText(value)+" "+rule.ruleText(), audience, connected), &value)
}

// PlanResolveFanOut decides the deliveries of one resolve of a rule with
// notify_on_resolve: the same audience rule as PlanFanOut, titled as
// resolved. value is what the resolving evaluation measured; hasValue is
// false when it measured no value (a percentile without measured calls, a
// baseline window without data, or a window under min_calls still has one).
func PlanResolveFanOut(rule Rule, value float64, hasValue bool, audience []Member, connected map[string]bool) []PlannedDelivery {
	summary := "no " + rule.label() + " to judge, rule " + rule.ruleText()
	var v *float64
	if hasValue {
		summary = rule.valueText(value) + ", rule " + rule.ruleText()
		v = &value
	}
	return withValue(planDeliveries(rule, KindResolved, ResolvedTitle(rule, value, hasValue), ResolvedBody(rule, value, hasValue), summary, audience, connected), v)
}

// Reasons a firing rule ends without resolving (PlanEndedFanOut).
const (
	EndRedefined = "redefined"
	EndDisabled  = "disabled"
	EndDeleted   = "deleted"
)

// PlanEndedFanOut decides the resolve notices of a firing rule with
// notify_on_resolve that an admin redefined, disabled or deleted (reason):
// the people who heard it fire hear that it no longer fires, and why. The
// audience rule is PlanFanOut's.
func PlanEndedFanOut(rule Rule, reason string, audience []Member, connected map[string]bool) []PlannedDelivery {
	title := "Resolved: " + rule.Name + " (rule " + reason + ")"
	body := "The rule was " + reason + " while firing, so it no longer fires on its old condition (" + rule.label() + " " + rule.ruleText() + ")."
	if reason == EndRedefined {
		body = "The rule was redefined while firing; its old condition (" + rule.label() + " " + rule.ruleText() + ") no longer applies, and the next evaluation judges the new one."
	}
	return planDeliveries(rule, KindResolved, title, body, "rule "+reason, audience, connected)
}

func planDeliveries(rule Rule, kind, title, body, summary string, audience []Member, connected map[string]bool) []PlannedDelivery {
	var out []PlannedDelivery
	seen := make(map[string]bool, len(audience))
	for _, m := range audience {
		if m.UserID == "" || seen[m.UserID] {
			continue
		}
		seen[m.UserID] = true
		for _, e := range catalogue() {
			if e.Scope != ScopePersonal || !rule.Names(e.ID) || !m.Prefs.Allows(e.ID) {
				continue
			}
			uid := m.UserID
			out = append(out, PlannedDelivery{Kind: kind, Channel: e.ID, RecipientUserID: &uid, Status: personalStatus(e.ID), Title: title, Body: body, Summary: summary})
		}
	}
	for _, e := range catalogue() {
		if e.Scope == ScopeTeam && rule.Names(e.ID) && connected[e.ID] {
			out = append(out, PlannedDelivery{Kind: kind, Channel: e.ID, Status: StatusQueued, Title: title, Body: body, Summary: summary})
		}
	}
	return out
}

func personalStatus(channel string) string {
	if channel == ChannelInApp {
		return StatusDelivered
	}
	return StatusQueued
}

// FiringTitle is the title of a firing rule's deliveries, short enough for a
// notification line, e.g. "Firing: Search errors (error rate 12.5%)".
func FiringTitle(r Rule, value float64) string {
	return "Firing: " + r.Name + " (" + r.valueText(value) + ")"
}

// FiringBody says what was measured against what, e.g.
// "Over the last 5 minutes: error rate 12.5% for tool search_docs (rule: > 5%)."
func FiringBody(r Rule, value float64) string {
	return "Over the last " + windowText(r.WindowMinutes) + ": " + r.valueText(value) + r.toolText() + " (rule: " + r.ruleText() + ")."
}

// ResolvedTitle is the title of a resolve notice, e.g.
// "Resolved: Search errors (error rate 1.2%)".
func ResolvedTitle(r Rule, value float64, hasValue bool) string {
	if !hasValue {
		return "Resolved: " + r.Name
	}
	return "Resolved: " + r.Name + " (" + r.valueText(value) + ")"
}

// ResolvedBody says the condition no longer holds, e.g. "Over the last 5
// minutes: error rate 1.2% for tool search_docs, no longer breaking the rule
// (> 5%)."
func ResolvedBody(r Rule, value float64, hasValue bool) string {
	measured := "no " + r.label() + " to judge"
	if hasValue {
		measured = r.valueText(value)
	}
	return "Over the last " + windowText(r.WindowMinutes) + ": " + measured + r.toolText() + ", no longer breaking the rule (" + r.ruleText() + ")."
}

// label names what the rule compares: the metric, or its ratio to the
// baseline.
func (r Rule) label() string {
	if r.PreviousRelease() {
		return metricLabel(r.Metric) + " vs. the previous release"
	}
	if r.Ratio() {
		return metricLabel(r.Metric) + " vs. a week ago"
	}
	return metricLabel(r.Metric)
}

// valueText is a measured value with its label, a ratio as "0.42x".
func (r Rule) valueText(v float64) string {
	return r.label() + " " + r.format(v)
}

func (r Rule) format(v float64) string {
	if r.Ratio() {
		return formatNumber(v, 2) + "x"
	}
	return formatMetric(r.Metric, v)
}

func (r Rule) ruleText() string {
	if r.Seasonal() {
		return r.seasonalRuleText()
	}
	return r.Comparator + " " + r.format(r.Threshold)
}

func (r Rule) toolText() string {
	if r.Tool != nil {
		return " for tool " + *r.Tool
	}
	return ""
}

func metricLabel(metric string) string {
	switch metric {
	case MetricErrorRate:
		return "error rate"
	case MetricErrors:
		return "errors"
	case MetricCalls:
		return "calls"
	case MetricP95:
		return "p95 latency"
	case MetricP50:
		return "median latency"
	case MetricP99:
		return "p99 latency"
	case MetricSessions:
		return "sessions"
	case MetricUsers:
		return "users"
	case MetricToolChanges:
		return "tool changes"
	case MetricProbeDown:
		return "failed probe checks in a row"
	case MetricUnknownToolCalls:
		return "calls of unknown tools"
	case MetricRepeatedCalls:
		return "repeated calls"
	}
	return metric
}

// formatMetric shows error rates as percentages and latencies in ms, rounded
// for reading; the exact value is in the evaluation, not in prose.
func formatMetric(metric string, v float64) string {
	switch metric {
	case MetricErrorRate:
		return formatNumber(v*100, 2) + "%"
	case MetricP50, MetricP95, MetricP99:
		return formatNumber(v, 1) + " ms"
	}
	return formatNumber(v, 2)
}

func formatNumber(v float64, decimals int) string {
	p := math.Pow10(decimals)
	return strconv.FormatFloat(math.Round(v*p)/p, 'f', -1, 64)
}

func windowText(minutes int) string {
	switch {
	case minutes == 1:
		return "minute"
	case minutes == 60:
		return "hour"
	case minutes%60 == 0:
		return strconv.Itoa(minutes/60) + " hours"
	}
	return strconv.Itoa(minutes) + " minutes"
}

func checkLimit(limit *int) error {
	switch {
	case *limit == 0:
		*limit = DefaultPageLimit
	case *limit < 1 || *limit > MaxPageLimit:
		return telemetry.FieldError(telemetry.EINVALID, "query.limit", "The limit must be 1 to %d.", MaxPageLimit)
	}
	return nil
}

// NotificationService reads the account's delivery log (admins only).
type NotificationService interface {
	// Notifications returns a page of the account's deliveries on every
	// channel, newest first. Call f.Validate first. Returns EBADREQUEST for
	// a malformed cursor (ParseDeliveryCursor).
	Notifications(ctx context.Context, accountID string, f NotificationFilter) (NotificationPage, error)

	// RetryNotification queues a failed email or team-chat delivery again,
	// due now, with a fresh round of attempts, and returns it. Returns
	// ENOTFOUND (unknown, or another account's) and ECONFLICT (not failed,
	// or an in_app delivery).
	RetryNotification(ctx context.Context, accountID, id string) (Notification, error)
}
