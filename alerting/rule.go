package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
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
	metrics = []string{MetricErrorRate, MetricErrors, MetricCalls, MetricP95, MetricP50, MetricP99, MetricSessions, MetricUsers, MetricToolChanges}
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
	// Baseline is nil or BaselineWeekAgo.
	Baseline *string `json:"baseline"`
	// RenotifyMinutes, while the rule is firing, delivers again every so
	// many minutes (at least MinRenotifyMinutes); nil never.
	RenotifyMinutes *int `json:"renotify_minutes"`
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

// Value picks the rule's figure out of its MCP's window stats, as
// analytics.WindowReader returns them for the rule's window: the "" entry
// (every item of the MCP) or, for a rule naming a tool, that tool's
// tools/call items. An absent entry means no items: counts and error_rate
// are 0 (ok true), p95_ms has no value (ok false). error_rate is
// errors / calls, 0 when there are no calls, like the metric reads.
func (r Rule) Value(stats map[string]analytics.WindowStat) (value float64, ok bool) {
	st := r.stat(stats)
	switch r.Metric {
	case MetricCalls:
		return float64(st.Calls), true
	case MetricErrors:
		return float64(st.Errors), true
	case MetricErrorRate:
		if st.Calls == 0 {
			return 0, true
		}
		return float64(st.Errors) / float64(st.Calls), true
	case MetricP95:
		return derefValue(st.P95Ms)
	case MetricP50:
		return derefValue(st.P50Ms)
	case MetricP99:
		return derefValue(st.P99Ms)
	case MetricSessions:
		return float64(st.Sessions), true
	case MetricUsers:
		return float64(st.Users), true
	case MetricToolChanges:
		return float64(st.ToolChanges), true
	}
	return 0, false
}

func derefValue(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// stat returns the rule's entry of a window's stats (see Value).
func (r Rule) stat(stats map[string]analytics.WindowStat) analytics.WindowStat {
	if r.Tool != nil {
		return stats[*r.Tool]
	}
	return stats[""]
}

// Reading is what one evaluation of a rule measured and concluded.
type Reading struct {
	// Value is the figure compared with the threshold: the metric over the
	// window or, with a baseline, its ratio to the baseline's; HasValue is
	// false when there is none (a percentile without measured calls, or a
	// baseline with no value).
	Value    float64
	HasValue bool
	// Baseline is the baseline window's figure, when the rule has one and
	// it has a value.
	Baseline *float64
	// Calls is the number of calls in the window (what min_calls counts).
	Calls int64
	// Breached: the rule's condition holds.
	Breached bool
	// Hold: the reading cannot judge the rule (a guarded metric under
	// min_calls, a baseline of 0 or none), which keeps its state whatever
	// it is.
	Hold bool
}

// Read measures the rule: cur is its window's stats and prev the baseline
// window's (nil without a baseline), both as analytics.WindowSetReader
// returns them for one MCP and window length.
//
//   - A guarded metric (error_rate, errors, latencies) over a window with
//     fewer than MinCalls calls holds the rule's state, whatever its
//     value: too few calls to say the condition holds, or that it ended.
//   - With a baseline, the value is the window's figure divided by the
//     baseline window's; when the baseline's figure is 0 or has no value,
//     the reading holds the rule's state (there is nothing to compare with).
func (r Rule) Read(cur, prev map[string]analytics.WindowStat) Reading {
	value, ok := r.Value(cur)
	rd := Reading{Value: value, HasValue: ok, Calls: r.stat(cur).Calls}
	if r.MinCalls > 0 && contains(guarded, r.Metric) && rd.Calls < int64(r.MinCalls) {
		rd.Hold = true
		return rd
	}
	if r.Baseline != nil {
		base, bok := r.Value(prev)
		if bok {
			rd.Baseline = &base
		}
		if !bok || base == 0 {
			rd.Value, rd.HasValue, rd.Hold = 0, false, true
			return rd
		}
		rd.Value = value / base
	}
	rd.Breached = r.Breached(rd.Value, rd.HasValue)
	return rd
}

// Breached reports whether a measured value breaks the rule. hasValue is
// false when the metric has no value over the window, which happens only for
// p95_ms with no measured call (counts and error_rate are 0 on no data): a
// p95 rule with no data is not breached, since there is no latency to be too
// high or too low. A calls rule with no data sees 0, so "calls < 1" fires
// when an MCP goes silent.
func (r Rule) Breached(value float64, hasValue bool) bool {
	return hasValue && Compare(r.Comparator, value, r.Threshold)
}

// Names reports whether the rule asks for deliveries on channel.
func (r Rule) Names(channel string) bool {
	return contains(r.Channels, channel)
}

// Compare applies a comparator. An unknown comparator, or NaN on either side,
// compares false, so a corrupt rule can never fire.
func Compare(comparator string, value, threshold float64) bool {
	switch comparator {
	case CompGT:
		return value > threshold
	case CompGE:
		return value >= threshold
	case CompLT:
		return value < threshold
	case CompLE:
		return value <= threshold
	}
	return false
}

// Transition returns a rule's next state after an evaluation, and whether
// that evaluation fired it (ok → firing: create deliveries) or resolved it
// (firing → ok). A firing rule that is still breached does not fire again.
// An unknown state is treated as ok.
func Transition(state string, breached bool) (next string, fired, resolved bool) {
	switch {
	case state == StateFiring && breached:
		return StateFiring, false, false
	case state == StateFiring:
		return StateOK, false, true
	case breached:
		return StateFiring, true, false
	default:
		return StateOK, false, false
	}
}

// Evaluation is the answer of POST /v1/rules/{ruleId}/evaluate: the state
// after evaluating, the measured value (null when the metric has no value,
// see Rule.Breached) and whether this evaluation fired the rule.
type Evaluation struct {
	State string   `json:"state"`
	Value *float64 `json:"value"`
	Fired bool     `json:"fired"`
	// Resolved: this evaluation resolved the rule (firing → ok).
	Resolved bool `json:"resolved"`
	// BaselineValue is the baseline window's figure; nil without a
	// baseline, or when it has no value.
	BaselineValue *float64 `json:"baseline_value"`
	// Calls is the window's number of calls, what min_calls is checked
	// against.
	Calls int64 `json:"calls"`
	// Deliveries is how many deliveries this evaluation created (0 when
	// it changed nothing, when snoozed, or on a resolve without
	// notify_on_resolve). An evaluation that keeps a rule firing creates
	// some when it sends the notice of a firing its snooze muted
	// (Rule.SnoozeEnded).
	Deliveries int `json:"deliveries"`
}

// RuleCreate is the body of POST /v1/mcps/{id}/rules.
type RuleCreate struct {
	Name          string   `json:"name"`
	Metric        string   `json:"metric"`
	Tool          *string  `json:"tool,omitempty"`
	Comparator    string   `json:"comparator"`
	Threshold     float64  `json:"threshold"`
	WindowMinutes int      `json:"window_minutes"`
	Channels      []string `json:"channels"`
	// Enabled defaults to true when absent.
	Enabled *bool `json:"enabled,omitempty"`
	// NotifyOnResolve defaults to false.
	NotifyOnResolve *bool `json:"notify_on_resolve,omitempty"`
	// SnoozedUntil in the past is accepted and means not snoozed.
	SnoozedUntil *time.Time `json:"snoozed_until,omitempty"`
	// MinCalls defaults to 0.
	MinCalls *int `json:"min_calls,omitempty"`
	// Baseline is nil or BaselineWeekAgo.
	Baseline *string `json:"baseline,omitempty"`
	// RenotifyMinutes is nil (default) or at least MinRenotifyMinutes.
	RenotifyMinutes *int `json:"renotify_minutes,omitempty"`
}

// Validate checks every field and returns the first problem as EINVALID with
// the field's body location. Besides the contract's rules it refuses what
// would be stored but could never mean anything: a negative threshold (every
// metric is >= 0), an error_rate threshold above 1 (it is a fraction, so 5%
// is 0.05, and "> 5" could never fire), a blank name, and NUL characters,
// which Postgres cannot store in text.
func (c RuleCreate) Validate() error {
	if err := checkText("body.name", c.Name, MaxRuleNameLen); err != nil {
		return err
	}
	if strings.TrimSpace(c.Name) == "" {
		return telemetry.FieldError(telemetry.EINVALID, "body.name", "The name must not be blank.")
	}
	if !contains(metrics, c.Metric) {
		return telemetry.FieldError(telemetry.EINVALID, "body.metric", "The metric must be one of error_rate, errors, calls, p50_ms, p95_ms, p99_ms, sessions, users or tool_changes.")
	}
	if c.Tool != nil {
		if err := checkText("body.tool", *c.Tool, MaxRuleToolLen); err != nil {
			return err
		}
	}
	if !contains(comparators, c.Comparator) {
		return telemetry.FieldError(telemetry.EINVALID, "body.comparator", "The comparator must be one of >, >=, < or <=.")
	}
	if c.Baseline != nil && *c.Baseline != BaselineWeekAgo {
		return telemetry.FieldError(telemetry.EINVALID, "body.baseline", "The baseline must be null or \"week_ago\".")
	}
	if err := checkThreshold(c.Metric, c.Threshold, c.Baseline != nil); err != nil {
		return err
	}
	if c.WindowMinutes < MinWindowMinutes || c.WindowMinutes > MaxWindowMinutes {
		return telemetry.FieldError(telemetry.EINVALID, "body.window_minutes", "The window must be %d to %d minutes.", MinWindowMinutes, MaxWindowMinutes)
	}
	if c.MinCalls != nil && (*c.MinCalls < 0 || *c.MinCalls > MaxMinCalls) {
		return telemetry.FieldError(telemetry.EINVALID, "body.min_calls", "min_calls must be 0 to %d.", MaxMinCalls)
	}
	if c.RenotifyMinutes != nil && (*c.RenotifyMinutes < MinRenotifyMinutes || *c.RenotifyMinutes > MaxRenotifyMinutes) {
		return telemetry.FieldError(telemetry.EINVALID, "body.renotify_minutes", "renotify_minutes must be null or %d to %d.", MinRenotifyMinutes, MaxRenotifyMinutes)
	}
	if c.SnoozedUntil != nil && (c.SnoozedUntil.Year() < 1 || c.SnoozedUntil.Year() > 9999) {
		return telemetry.FieldError(telemetry.EINVALID, "body.snoozed_until", "snoozed_until must be an RFC 3339 time between years 1 and 9999.")
	}
	return checkChannels(c.Channels)
}

// Rule returns the new rule the create describes, in state ok. Call Validate
// first. A snooze that has ended by now is dropped.
func (c RuleCreate) Rule(id, mcpID string, now time.Time) Rule {
	enabled := c.Enabled == nil || *c.Enabled
	r := Rule{
		ID: id, MCPID: mcpID, Name: c.Name, Metric: c.Metric, Tool: cloneString(c.Tool),
		Comparator: c.Comparator, Threshold: c.Threshold, WindowMinutes: c.WindowMinutes,
		Channels: append([]string(nil), c.Channels...), Enabled: enabled,
		State: StateOK, CreatedAt: now.UTC(),
		NotifyOnResolve: c.NotifyOnResolve != nil && *c.NotifyOnResolve,
		SnoozedUntil:    cloneTime(c.SnoozedUntil), Baseline: cloneString(c.Baseline),
		RenotifyMinutes: cloneInt(c.RenotifyMinutes),
	}
	if c.MinCalls != nil {
		r.MinCalls = *c.MinCalls
	}
	r.ClearExpiredSnooze(now)
	return r
}

// RuleUpdate is the body of PATCH /v1/rules/{ruleId}: absent fields keep
// their value. Channels absent or null keeps the channels; an empty array is
// refused like on create.
type RuleUpdate struct {
	Name   *string `json:"name,omitempty"`
	Metric *string `json:"metric,omitempty"`
	// Tool needs three states: absent (keep), null (all tools), a name.
	Tool          NullableString `json:"tool,omitzero"`
	Comparator    *string        `json:"comparator,omitempty"`
	Threshold     *float64       `json:"threshold,omitempty"`
	WindowMinutes *int           `json:"window_minutes,omitempty"`
	Channels      []string       `json:"channels,omitempty"`
	Enabled       *bool          `json:"enabled,omitempty"`
	// NotifyOnResolve absent keeps the setting.
	NotifyOnResolve *bool `json:"notify_on_resolve,omitempty"`
	// SnoozedUntil: absent keeps the snooze, null ends it, a time sets it
	// (one in the past ends it too).
	SnoozedUntil NullableTime `json:"snoozed_until,omitzero"`
	MinCalls     *int         `json:"min_calls,omitempty"`
	// Baseline: absent keeps it, null removes it, "week_ago" sets it.
	Baseline NullableString `json:"baseline,omitzero"`
	// RenotifyMinutes: absent keeps it, null stops re-notifying.
	RenotifyMinutes NullableInt `json:"renotify_minutes,omitzero"`
}

// Apply returns r with the update merged in, validated as a whole (so a
// metric change is checked against the kept threshold). Errors are EINVALID
// on the field at fault.
//
// A change to what the rule measures (metric, tool, comparator, threshold,
// window, min_calls, baseline), or disabling it, puts the rule back in state
// ok without resolving it: the old firing was about a condition that no
// longer exists, and the next evaluation judges the new one from scratch,
// firing if it is breached. Renaming, changing channels, notify_on_resolve
// or the snooze keeps the state. A snooze that has ended by now is dropped.
func (u RuleUpdate) Apply(r Rule, now time.Time) (Rule, error) {
	next := r
	next.Channels = append([]string(nil), r.Channels...)
	next.Tool = cloneString(r.Tool)
	next.Baseline = cloneString(r.Baseline)
	next.SnoozedUntil = cloneTime(r.SnoozedUntil)
	if u.Name != nil {
		next.Name = *u.Name
	}
	if u.Metric != nil {
		next.Metric = *u.Metric
	}
	if u.Tool.Set {
		next.Tool = cloneString(u.Tool.Value)
	}
	if u.Comparator != nil {
		next.Comparator = *u.Comparator
	}
	if u.Threshold != nil {
		next.Threshold = *u.Threshold
	}
	if u.WindowMinutes != nil {
		next.WindowMinutes = *u.WindowMinutes
	}
	if u.Channels != nil {
		next.Channels = append([]string(nil), u.Channels...)
	}
	if u.Enabled != nil {
		next.Enabled = *u.Enabled
	}
	if u.NotifyOnResolve != nil {
		next.NotifyOnResolve = *u.NotifyOnResolve
	}
	if u.SnoozedUntil.Set {
		next.SnoozedUntil = cloneTime(u.SnoozedUntil.Value)
	}
	if u.MinCalls != nil {
		next.MinCalls = *u.MinCalls
	}
	if u.Baseline.Set {
		next.Baseline = cloneString(u.Baseline.Value)
	}
	next.RenotifyMinutes = cloneInt(r.RenotifyMinutes)
	if u.RenotifyMinutes.Set {
		next.RenotifyMinutes = cloneInt(u.RenotifyMinutes.Value)
	}
	enabled := next.Enabled
	c := RuleCreate{Name: next.Name, Metric: next.Metric, Tool: next.Tool, Comparator: next.Comparator,
		Threshold: next.Threshold, WindowMinutes: next.WindowMinutes, Channels: next.Channels, Enabled: &enabled,
		SnoozedUntil: next.SnoozedUntil, MinCalls: &next.MinCalls, Baseline: next.Baseline, RenotifyMinutes: next.RenotifyMinutes}
	if err := c.Validate(); err != nil {
		return Rule{}, err
	}
	next.ClearExpiredSnooze(now)
	if next.Redefines(r) || !next.Enabled {
		next.State = StateOK
	}
	return next, nil
}

// Redefines reports whether r measures something else than old: a
// different metric, tool, comparator, threshold, window, min_calls or
// baseline.
func (r Rule) Redefines(old Rule) bool {
	return r.Metric != old.Metric || !equalStringPtr(r.Tool, old.Tool) || r.Comparator != old.Comparator ||
		r.Threshold != old.Threshold || r.WindowMinutes != old.WindowMinutes || r.MinCalls != old.MinCalls ||
		!equalStringPtr(r.Baseline, old.Baseline)
}

// Nullable is a JSON field that tells "absent" (Set false) from null (Set
// true, Value nil) and from a value of T. Use it with `json:",omitzero"`.
// The httpapi package describes each use to OpenAPI.
type Nullable[T any] struct {
	Set   bool
	Value *T
}

// NullableTime is a nullable RFC 3339 time; NullableString a nullable
// string.
type (
	NullableTime   = Nullable[time.Time]
	NullableString = Nullable[string]
)

// UnmarshalJSON records that the field was present.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	n.Value = nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

// MarshalJSON writes the value or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	return json.Marshal(n.Value)
}

// IsZero reports an absent field, for omitzero.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// NullableInt is NullableString for an integer.
type NullableInt struct {
	Set   bool
	Value *int
}

// UnmarshalJSON records that the field was present.
func (n *NullableInt) UnmarshalJSON(b []byte) error {
	n.Set, n.Value = true, nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

// MarshalJSON writes the value or null.
func (n NullableInt) MarshalJSON() ([]byte, error) { return json.Marshal(n.Value) }

// IsZero reports an absent field, for omitzero.
func (n NullableInt) IsZero() bool { return !n.Set }

func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func checkText(field, s string, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return telemetry.FieldError(telemetry.EINVALID, field, "The %s must not be empty.", lastPart(field))
	case n > max:
		return telemetry.FieldError(telemetry.EINVALID, field, "The %s must be at most %d characters.", lastPart(field), max)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return telemetry.FieldError(telemetry.EINVALID, field, "The %s must be valid UTF-8 without NUL characters.", lastPart(field))
	}
	return nil
}

func checkThreshold(metric string, t float64, ratio bool) error {
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		return telemetry.FieldError(telemetry.EINVALID, "body.threshold", "The threshold must be a finite number.")
	case t < 0:
		return telemetry.FieldError(telemetry.EINVALID, "body.threshold", "The threshold must not be negative; every metric is zero or more.")
	case metric == MetricErrorRate && t > 1 && !ratio:
		return telemetry.FieldError(telemetry.EINVALID, "body.threshold", "An error_rate threshold is a fraction from 0 to 1 (5%% is 0.05).")
	}
	return nil
}

func checkChannels(chs []string) error {
	if len(chs) == 0 {
		return telemetry.FieldError(telemetry.EINVALID, "body.channels", "Name at least one channel: in_app, email, slack or discord.")
	}
	for i, ch := range chs {
		field := "body.channels[" + strconv.Itoa(i) + "]"
		if !ValidChannel(ch) {
			return telemetry.FieldError(telemetry.EINVALID, field, "Unknown channel %q; channels are in_app, email, slack and discord.", ch)
		}
		if contains(chs[:i], ch) {
			return telemetry.FieldError(telemetry.EINVALID, field, "The channel %s is named twice.", ch)
		}
	}
	return nil
}

func lastPart(field string) string {
	return strings.ReplaceAll(field[strings.LastIndexByte(field, '.')+1:], "_", " ")
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}

func cloneTime(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	t := p.UTC()
	return &t
}

func equalStringPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
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
	Threshold float64   `json:"threshold"`
	At        time.Time `json:"at"`
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
