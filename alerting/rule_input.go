package alerting

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

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
	// Baseline is nil, BaselineWeekAgo or BaselineSeasonal.
	Baseline *string `json:"baseline,omitempty"`
	// RenotifyMinutes is nil (default) or at least MinRenotifyMinutes.
	RenotifyMinutes *int `json:"renotify_minutes,omitempty"`
	// Sensitivity is for seasonal rules only; it defaults to medium there.
	Sensitivity *string `json:"sensitivity,omitempty"`
	// Severity is nil (SeverityError) or a Severity* constant.
	Severity *string `json:"severity,omitempty"`
	// ErrorKind is nil or one of analytics.ErrorKinds, for a rule on
	// errors or error_rate only.
	ErrorKind *string `json:"error_kind,omitempty"`
	// MinSeverity is nil or a change severity, for a rule on tool_changes.
	MinSeverity *string `json:"min_severity,omitempty"`
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
		return telemetry.FieldError(telemetry.EINVALID, "body.metric", "The metric must be one of error_rate, errors, calls, p50_ms, p95_ms, p99_ms, sessions, users, tool_changes, probe_down, unknown_tool_calls or repeated_calls.")
	}
	if c.Tool != nil {
		if err := checkText("body.tool", *c.Tool, MaxRuleToolLen); err != nil {
			return err
		}
	}
	if !contains(comparators, c.Comparator) {
		return telemetry.FieldError(telemetry.EINVALID, "body.comparator", "The comparator must be one of >, >=, < or <=.")
	}
	if err := checkErrorKind(c.Metric, c.ErrorKind); err != nil {
		return err
	}
	if err := checkMinSeverity(c.Metric, c.MinSeverity); err != nil {
		return err
	}
	if err := c.checkBaseline(); err != nil {
		return err
	}
	if err := checkThreshold(c.Metric, c.Threshold, c.Baseline != nil); err != nil {
		return err
	}
	if err := checkProbeRule(c.Metric, c.Tool, c.Baseline); err != nil {
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
	if c.Severity != nil && !ValidSeverity(*c.Severity) {
		return telemetry.FieldError(telemetry.EINVALID, "body.severity", "The severity must be critical, error, warning or info.")
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
		RenotifyMinutes: cloneInt(c.RenotifyMinutes), Sensitivity: c.sensitivity(), ErrorKind: cloneString(c.ErrorKind),
		MinSeverity: cloneString(c.MinSeverity),
	}
	if c.MinCalls != nil {
		r.MinCalls = *c.MinCalls
	}
	r.Severity = SeverityError
	if c.Severity != nil {
		r.Severity = *c.Severity
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
	// Sensitivity: absent keeps it (dropped when the baseline is no
	// longer seasonal), null means the default (medium) of a seasonal rule.
	Sensitivity NullableString `json:"sensitivity,omitzero"`
	// Severity absent keeps it.
	Severity *string `json:"severity,omitempty"`
	// ErrorKind: absent keeps it, null removes it, a kind sets it.
	ErrorKind NullableString `json:"error_kind,omitzero"`
	// MinSeverity: absent keeps it, null removes it, a severity sets it.
	MinSeverity NullableString `json:"min_severity,omitzero"`
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
	next.ErrorKind = cloneString(r.ErrorKind)
	if u.ErrorKind.Set {
		next.ErrorKind = cloneString(u.ErrorKind.Value)
	}
	next.MinSeverity = cloneString(r.MinSeverity)
	if u.MinSeverity.Set {
		next.MinSeverity = cloneString(u.MinSeverity.Value)
	}
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
	next.Sensitivity = cloneString(r.Sensitivity)
	if u.Sensitivity.Set {
		next.Sensitivity = cloneString(u.Sensitivity.Value)
	}
	if !next.Seasonal() && !u.Sensitivity.Set {
		next.Sensitivity = nil
	}
	next.RenotifyMinutes = cloneInt(r.RenotifyMinutes)
	if u.RenotifyMinutes.Set {
		next.RenotifyMinutes = cloneInt(u.RenotifyMinutes.Value)
	}
	if u.Severity != nil {
		next.Severity = *u.Severity
	}
	enabled := next.Enabled
	sev := next.Severity
	c := RuleCreate{Severity: &sev, Name: next.Name, Metric: next.Metric, Tool: next.Tool, Comparator: next.Comparator,
		Threshold: next.Threshold, WindowMinutes: next.WindowMinutes, Channels: next.Channels, Enabled: &enabled,
		SnoozedUntil: next.SnoozedUntil, MinCalls: &next.MinCalls, Baseline: next.Baseline, RenotifyMinutes: next.RenotifyMinutes,
		Sensitivity: next.Sensitivity, ErrorKind: next.ErrorKind, MinSeverity: next.MinSeverity}
	if err := c.Validate(); err != nil {
		return Rule{}, err
	}
	next.Sensitivity = c.sensitivity()
	next.ClearExpiredSnooze(now)
	if next.Redefines(r) || !next.Enabled {
		next.State = StateOK
	}
	return next, nil
}

// Redefines reports whether r measures something else than old: a
// different metric, tool, comparator, threshold, window, min_calls,
// baseline or sensitivity.
func (r Rule) Redefines(old Rule) bool {
	return r.Metric != old.Metric || !equalStringPtr(r.Tool, old.Tool) || r.Comparator != old.Comparator ||
		r.Threshold != old.Threshold || r.WindowMinutes != old.WindowMinutes || r.MinCalls != old.MinCalls ||
		!equalStringPtr(r.Baseline, old.Baseline) || !equalStringPtr(r.Sensitivity, old.Sensitivity) ||
		!equalStringPtr(r.ErrorKind, old.ErrorKind) || !equalStringPtr(r.MinSeverity, old.MinSeverity)
}

// checkMinSeverity refuses a min_severity that is not a change severity,
// or on a metric other than tool_changes.
func checkMinSeverity(metric string, sev *string) error {
	if sev == nil {
		return nil
	}
	if !analytics.ValidChangeSeverity(*sev) {
		return telemetry.FieldError(telemetry.EINVALID, "body.min_severity", "min_severity must be null, breaking, risky or benign.")
	}
	if metric != MetricToolChanges {
		return telemetry.FieldError(telemetry.EINVALID, "body.min_severity", "min_severity filters the metric tool_changes only.")
	}
	return nil
}

// checkErrorKind refuses an error_kind that is not a kind, or on a metric
// other than errors and error_rate.
func checkErrorKind(metric string, kind *string) error {
	if kind == nil {
		return nil
	}
	if !analytics.ValidErrorKind(*kind) {
		return telemetry.FieldError(telemetry.EINVALID, "body.error_kind",
			"error_kind must be null or one of tool_error, exception, invalid_params, unknown_tool, method_not_found, timeout, cancelled, auth, internal or other.")
	}
	if metric != MetricErrors && metric != MetricErrorRate {
		return telemetry.FieldError(telemetry.EINVALID, "body.error_kind", "error_kind filters the metrics errors and error_rate only.")
	}
	return nil
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
		return telemetry.FieldError(telemetry.EINVALID, "body.channels", "Name at least one channel: %s.", strings.Join(ChannelIDs(), ", "))
	}
	for i, ch := range chs {
		field := "body.channels[" + strconv.Itoa(i) + "]"
		if !ValidChannel(ch) {
			return telemetry.FieldError(telemetry.EINVALID, field, "Unknown channel %q; the channels are %s.", ch, strings.Join(ChannelIDs(), ", "))
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
