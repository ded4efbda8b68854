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
	// MaxRulesPerAccount is the default cap on an account's rules
	// (configurable); past it CreateRule fails with ELIMITREACHED.
	MaxRulesPerAccount = 1000
)

var (
	metrics     = []string{MetricErrorRate, MetricErrors, MetricCalls, MetricP95}
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
	key := ""
	if r.Tool != nil {
		key = *r.Tool
	}
	st := stats[key]
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
		if st.P95Ms == nil {
			return 0, false
		}
		return *st.P95Ms, true
	}
	return 0, false
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
		return telemetry.FieldError(telemetry.EINVALID, "body.metric", "The metric must be one of error_rate, errors, calls or p95_ms.")
	}
	if c.Tool != nil {
		if err := checkText("body.tool", *c.Tool, MaxRuleToolLen); err != nil {
			return err
		}
	}
	if !contains(comparators, c.Comparator) {
		return telemetry.FieldError(telemetry.EINVALID, "body.comparator", "The comparator must be one of >, >=, < or <=.")
	}
	if err := checkThreshold(c.Metric, c.Threshold); err != nil {
		return err
	}
	if c.WindowMinutes < MinWindowMinutes || c.WindowMinutes > MaxWindowMinutes {
		return telemetry.FieldError(telemetry.EINVALID, "body.window_minutes", "The window must be %d to %d minutes.", MinWindowMinutes, MaxWindowMinutes)
	}
	return checkChannels(c.Channels)
}

// Rule returns the new rule the create describes, in state ok. Call Validate
// first.
func (c RuleCreate) Rule(id, mcpID string, now time.Time) Rule {
	enabled := c.Enabled == nil || *c.Enabled
	return Rule{
		ID: id, MCPID: mcpID, Name: c.Name, Metric: c.Metric, Tool: cloneString(c.Tool),
		Comparator: c.Comparator, Threshold: c.Threshold, WindowMinutes: c.WindowMinutes,
		Channels: append([]string(nil), c.Channels...), Enabled: enabled,
		State: StateOK, CreatedAt: now.UTC(),
	}
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
}

// Apply returns r with the update merged in, validated as a whole (so a
// metric change is checked against the kept threshold). Errors are EINVALID
// on the field at fault.
//
// A change to what the rule measures (metric, tool, comparator, threshold,
// window), or disabling it, puts the rule back in state ok without resolving
// it: the old firing was about a condition that no longer exists, and the
// next evaluation judges the new one from scratch, firing if it is breached.
// Renaming or changing channels keeps the state.
func (u RuleUpdate) Apply(r Rule) (Rule, error) {
	next := r
	next.Channels = append([]string(nil), r.Channels...)
	next.Tool = cloneString(r.Tool)
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
	enabled := next.Enabled
	c := RuleCreate{Name: next.Name, Metric: next.Metric, Tool: next.Tool, Comparator: next.Comparator,
		Threshold: next.Threshold, WindowMinutes: next.WindowMinutes, Channels: next.Channels, Enabled: &enabled}
	if err := c.Validate(); err != nil {
		return Rule{}, err
	}
	redefined := next.Metric != r.Metric || !equalStringPtr(next.Tool, r.Tool) || next.Comparator != r.Comparator ||
		next.Threshold != r.Threshold || next.WindowMinutes != r.WindowMinutes
	if redefined || !next.Enabled {
		next.State = StateOK
	}
	return next, nil
}

// NullableString is a JSON field that tells "absent" (Set false) from null
// (Set true, Value nil) and from a string. Use it with `json:",omitzero"`.
// The httpapi package describes it to OpenAPI as a nullable string.
type NullableString struct {
	Set   bool
	Value *string
}

// UnmarshalJSON records that the field was present.
func (n *NullableString) UnmarshalJSON(b []byte) error {
	n.Set = true
	n.Value = nil
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	n.Value = &s
	return nil
}

// MarshalJSON writes the value or null.
func (n NullableString) MarshalJSON() ([]byte, error) {
	return json.Marshal(n.Value)
}

// IsZero reports an absent field, for omitzero.
func (n NullableString) IsZero() bool { return !n.Set }

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

func checkThreshold(metric string, t float64) error {
	switch {
	case math.IsNaN(t) || math.IsInf(t, 0):
		return telemetry.FieldError(telemetry.EINVALID, "body.threshold", "The threshold must be a finite number.")
	case t < 0:
		return telemetry.FieldError(telemetry.EINVALID, "body.threshold", "The threshold must not be negative; every metric is zero or more.")
	case metric == MetricErrorRate && t > 1:
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

	// DeleteRule removes a rule; its deliveries stay. Returns ENOTFOUND.
	DeleteRule(ctx context.Context, accountID, ruleID string) error
}
