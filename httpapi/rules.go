package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
)

// RuleList is the answer of GET /v1/mcps/{id}/rules.
type RuleList struct {
	Items []alerting.Rule `json:"items" doc:"The MCP's rules, oldest first."`
}

// Field documentation shared by the create and update bodies.
const (
	docRuleName        = "What the rule is called in notifications; 1 to 200 characters."
	docRuleMetric      = "What the rule measures over its window: error_rate (errors / calls, a fraction: 0.05 is 5%; 0 with no calls), errors, calls (every item, or the tool's tools/call items), p50_ms, p95_ms and p99_ms (percentiles of duration_ms, t-digest; no value without measured calls, which never breaches), sessions (distinct session_ids) and users (distinct user_ids, falling back to the session_id), counted exactly; tool_changes (changes of the MCP's tool inventory: tools added, removed or whose schema changed, see GET /v1/mcps/{id}/inventory; of the named tool only when tool is set; at least min_severity when set); probe_down (consecutive failed checks of the MCP's probe, see POST /v1/mcps/{id}/probes; the window plays no part); unknown_tool_calls (items with error_kind unknown_tool, and tools/call items naming a tool the MCP's inventory did not list in the window: names agents asked for that the server does not have, as GET /v1/mcps/{id}/unknown-tools counts them; of that name when tool is set); repeated_calls (tool calls with the same tool and args_hash as their session's previous call within the window; see docs/failures.md)."
	docRuleTool        = "Restrict the rule to the tools/call items of this tool; null or absent means every item of the MCP."
	docRuleComparator  = "How the value is compared with the threshold."
	docRuleThreshold   = "The value the metric is compared with; not negative, and at most 1 for error_rate."
	docRuleWindow      = "The window measured: the last window_minutes minutes, 1 to 1440."
	docRuleChannels    = "Where a firing is delivered: a non-empty subset of the channel ids of the catalogue (GET /v1/account/channels; the enum lists them). A team channel nobody connected is accepted and simply gets nothing."
	docRuleSeverity    = "critical, error (default), warning or info: shown in every message of the rule's deliveries, the severity of its PagerDuty events, and a filter of the delivery log."
	docRuleEnabled     = "Disabled rules are not evaluated by the evaluator."
	docRuleNotify      = "Default false. When true, a resolve (firing → ok) creates deliveries exactly as a firing does (the team at that moment, each person's preferences, connected team channels; in_app delivered, others queued), titled \"Resolved: …\". Example: true."
	docRuleSnooze      = "RFC 3339 time or null. Until then the rule still evaluates, changes state and records its history, but creates no deliveries. A rule that fired while snoozed and still fires when the snooze ends notifies then, once (the snooze then reads back as null). A time in the past clears the snooze (it reads back as null). Example: \"2026-11-25T18:00:00Z\"."
	docRuleMinCalls    = "Integer >= 0, default 0. For error_rate, errors and the latency metrics (p50_ms, p95_ms, p99_ms), a window with fewer calls than this keeps the rule's state: no alarm on three calls with one error, and a firing rule does not resolve on a quiet window either. Ignored by calls, sessions and users. Example: 20."
	docRuleRenotify    = "null (default) or an integer of minutes, 5 to 10080. While the rule keeps firing, its deliveries are made again every so many minutes (titled \"Still firing: …\"), to the same audience rule as a firing; nothing while snoozed."
	docRuleSensitivity = "Seasonal rules only: low, medium (default) or high. The expected band is the median of the same window in the last four weeks ± k robust standard deviations (1.4826 × the median absolute deviation, never less than the metric's sampling noise), k = 6 (low), 4.5 (medium) or 3 (high); higher sensitivity fires on smaller departures and more often on noise (docs/alerting.md gives the measured false-alarm rates). null or absent on a seasonal rule means medium; refused on other rules."
	docRuleBaseline    = "null (default), \"week_ago\", \"previous_release\" or \"seasonal\". With seasonal the rule learns the week's rhythm: it fires when the window's value leaves the band expected from the same window at the same hour of the week over the last four weeks, above it for comparator > or >=, below it for < or <= (threshold is then ignored: send 0); with fewer than two weeks of history (weeks before the MCP existed and without any items do not count) it keeps its state. Not for tool_changes. With week_ago the value compared with the threshold is the window's value divided by the same window seven days earlier, so metric calls, comparator <, threshold 0.5 means \"under half of last week\" (and an error_rate threshold may then exceed 1: 2 means doubled). When the earlier value is 0 (or a percentile without measured calls) the rule keeps its state. With previous_release the value is the window's value divided by the previous release's over its last 24 hours of traffic (error_rate > 2: twice the previous release's; calls, errors, error_rate and p95_ms only, else 422 on body.baseline); the rule keeps its state while the MCP has fewer than two releases (docs/releases.md)."
)

type newRuleRequest struct {
	Name            string      `json:"name" doc:"What the rule is called in notifications; 1 to 200 characters."`
	Metric          string      `json:"metric" enum:"error_rate,errors,calls,p95_ms,p50_ms,p99_ms,sessions,users,tool_changes,probe_down,unknown_tool_calls,repeated_calls" doc:"What the rule measures over its window: error_rate (errors / calls, a fraction: 0.05 is 5%; 0 with no calls), errors, calls (every item, or the tool's tools/call items), p50_ms, p95_ms and p99_ms (percentiles of duration_ms; no value without measured calls, which never breaches), sessions (distinct session_ids), users (distinct user_ids, falling back to the session_id), tool_changes (tool inventory changes), probe_down (consecutive failed probe checks)."`
	Tool            *string     `json:"tool,omitempty" nullable:"true" doc:"Restrict the rule to the tools/call items of this tool; null or absent means every item of the MCP."`
	Comparator      string      `json:"comparator" enum:">,>=,<,<=" doc:"How the value is compared with the threshold."`
	Threshold       float64     `json:"threshold" doc:"The value the metric is compared with; not negative, and at most 1 for error_rate."`
	WindowMinutes   int         `json:"window_minutes" minimum:"1" maximum:"1440" doc:"The window measured: the last window_minutes minutes, 1 to 1440."`
	Channels        channelList `json:"channels" doc:"Where a firing is delivered: a non-empty subset of the channel ids (GET /v1/account/channels). A team channel nobody connected is accepted and simply gets nothing."`
	Enabled         *bool       `json:"enabled,omitempty" doc:"Default true. Disabled rules are not evaluated by the evaluator."`
	NotifyOnResolve *bool       `json:"notify_on_resolve,omitempty" doc:"Default false. When true, a resolve (firing → ok) creates deliveries exactly as a firing does, titled as resolved."`
	SnoozedUntil    *time.Time  `json:"snoozed_until,omitempty" nullable:"true" doc:"RFC 3339 or null: until then the rule evaluates and changes state but creates no deliveries. A time in the past means not snoozed."`
	MinCalls        *int        `json:"min_calls,omitempty" minimum:"0" maximum:"1000000000" doc:"Default 0. For error_rate, errors and the latency metrics, a window with fewer calls than this keeps the rule's state."`
	Baseline        *string     `json:"baseline,omitempty" nullable:"true" doc:"null (default), \"week_ago\" (compare the window's value divided by the same window seven days earlier), \"previous_release\" (divided by the previous release's value over its last 24 hours of traffic) or \"seasonal\" (fire when the value leaves the band expected at this hour of the week from the last four weeks, in the comparator's direction; threshold ignored)."`
	Sensitivity     *string     `json:"sensitivity,omitempty" nullable:"true" enum:"low,medium,high" doc:"Seasonal rules only: low, medium (default) or high; see the rule schema."`
	RenotifyMinutes *int        `json:"renotify_minutes,omitempty" nullable:"true" minimum:"5" maximum:"10080" doc:"null (default) or 5 to 10080: while firing, deliver again every so many minutes."`
	Severity        *string     `json:"severity,omitempty" enum:"critical,error,warning,info" doc:"Default error. critical, error, warning or info: shown in every message, the severity of PagerDuty events, a filter of the delivery log."`
	ErrorKind       *string     `json:"error_kind,omitempty" nullable:"true" enum:"tool_error,exception,invalid_params,unknown_tool,method_not_found,timeout,cancelled,auth,internal,other" doc:"null (default) or an error kind: for metrics errors and error_rate only (422 otherwise), count only the errors of that kind (error_rate: errors of that kind / calls). See docs/failures.md."`
	MinSeverity     *string     `json:"min_severity,omitempty" nullable:"true" enum:"breaking,risky,benign" doc:"null (default) or a change severity: for metric tool_changes only (422 otherwise), count only the changes at least that severe (risky counts risky and breaking). See docs/tool-changes.md."`
}

// nullableString is alerting.NullableString as OpenAPI sees it: a string
// or null, and absent when left out.
type nullableString struct {
	alerting.NullableString
}

// Schema describes the field as a nullable string.
func (nullableString) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Nullable: true, Description: docRuleTool + " Absent: unchanged."}
}

// nullableBaseline is the baseline of a PATCH: "week_ago", null (none) or
// absent (unchanged).
type nullableBaseline struct {
	alerting.NullableString
}

// Schema describes the field as a nullable string.
func (nullableBaseline) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Nullable: true, Description: docRuleBaseline + " Absent: unchanged."}
}

// nullableTime is alerting.NullableTime as OpenAPI sees it.
type nullableTime struct {
	alerting.NullableTime
}

// Schema describes the field as a nullable RFC 3339 time.
func (nullableTime) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Format: "date-time", Nullable: true,
		Description: docRuleSnooze + " null ends a snooze; absent: unchanged."}
}

type rulePatch struct {
	Name            *string             `json:"name,omitempty" doc:"What the rule is called in notifications; 1 to 200 characters."`
	Metric          *string             `json:"metric,omitempty" enum:"error_rate,errors,calls,p95_ms,p50_ms,p99_ms,sessions,users,tool_changes,probe_down,unknown_tool_calls,repeated_calls" doc:"What the rule measures; see the create body."`
	Tool            nullableString      `json:"tool,omitzero"`
	Comparator      *string             `json:"comparator,omitempty" enum:">,>=,<,<=" doc:"How the value is compared with the threshold."`
	Threshold       *float64            `json:"threshold,omitempty" doc:"The value the metric is compared with; not negative, and at most 1 for error_rate."`
	WindowMinutes   *int                `json:"window_minutes,omitempty" minimum:"1" maximum:"1440" doc:"The window measured, 1 to 1440 minutes."`
	Channels        channelList         `json:"channels,omitempty" doc:"Where a firing is delivered: a non-empty subset of the channel ids. Absent or null: unchanged."`
	Enabled         *bool               `json:"enabled,omitempty" doc:"Disabled rules are not evaluated by the evaluator."`
	NotifyOnResolve *bool               `json:"notify_on_resolve,omitempty" doc:"Whether a resolve creates deliveries too."`
	SnoozedUntil    nullableTime        `json:"snoozed_until,omitzero"`
	MinCalls        *int                `json:"min_calls,omitempty" minimum:"0" maximum:"1000000000" doc:"For error_rate, errors and the latency metrics, a window with fewer calls keeps the rule's state."`
	Baseline        nullableBaseline    `json:"baseline,omitzero"`
	RenotifyMinutes nullableInt         `json:"renotify_minutes,omitzero"`
	Sensitivity     nullableSensitivity `json:"sensitivity,omitzero"`
	Severity        *string             `json:"severity,omitempty" enum:"critical,error,warning,info" doc:"critical, error, warning or info. Absent: unchanged."`
	ErrorKind       nullableErrorKind   `json:"error_kind,omitzero"`
	MinSeverity     nullableMinSeverity `json:"min_severity,omitzero"`
}

// nullableMinSeverity is the min_severity of a PATCH: a severity, null
// (every change) or absent (unchanged).
type nullableMinSeverity struct {
	alerting.NullableString
}

// Schema describes the field as a nullable string.
func (nullableMinSeverity) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Nullable: true,
		Description: "null or breaking, risky or benign: tool_changes counts only the changes at least that severe. Absent: unchanged."}
}

// nullableSensitivity is the sensitivity of a PATCH: low, medium, high,
// null (medium on a seasonal rule) or absent (unchanged).
type nullableSensitivity struct {
	alerting.NullableString
}

// Schema describes the field as a nullable string.
func (nullableSensitivity) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Nullable: true, Enum: []any{"low", "medium", "high"}, Description: docRuleSensitivity + " Absent: unchanged (dropped when the baseline stops being seasonal)."}
}

// nullableErrorKind is the error_kind of a PATCH: a kind, null (every
// error) or absent (unchanged).
type nullableErrorKind struct {
	alerting.NullableString
}

// Schema describes the field as a nullable string.
func (nullableErrorKind) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Nullable: true,
		Description: "null or an error kind (tool_error, exception, invalid_params, unknown_tool, method_not_found, timeout, cancelled, auth, internal, other): errors and error_rate count only that kind. Absent: unchanged."}
}

// nullableInt is the renotify_minutes of a PATCH: minutes, null (never)
// or absent (unchanged).
type nullableInt struct {
	alerting.NullableInt
}

// Schema describes the field as a nullable integer.
func (nullableInt) Schema(huma.Registry) *huma.Schema {
	five, week := 5.0, 10080.0
	return &huma.Schema{Type: huma.TypeInteger, Nullable: true, Minimum: &five, Maximum: &week, Description: docRuleRenotify + " Absent: unchanged."}
}

type mcpRulesInput struct {
	MCPID string `path:"id" doc:"The MCP's id."`
}

type createRuleInput struct {
	MCPID string `path:"id" doc:"The MCP's id."`
	Body  newRuleRequest
}

type ruleInput struct {
	RuleID string `path:"ruleId" doc:"The rule's id."`
}

type updateRuleInput struct {
	RuleID string `path:"ruleId" doc:"The rule's id."`
	Body   rulePatch
}

type ruleOutput struct {
	Body alerting.Rule
}

type createdRuleOutput struct {
	Status int
	Body   alerting.Rule
}

type ruleListOutput struct {
	Body RuleList
}

type evaluationOutput struct {
	Body alerting.Evaluation
}

const ruleStatesDoc = `A rule is ` + "`ok`" + ` or ` + "`firing`" + `. The evaluator measures every enabled rule every minute
(configurable): ` + "`ok`" + ` → ` + "`firing`" + ` fires (deliveries are created at once for the people on the team
at that moment, on the channels where the rule and each person's preferences agree: ` + "`in_app`" + `
delivered to the inbox, ` + "`email`" + ` queued, one queued delivery per named team-chat channel that is
connected, nothing for one that is not); ` + "`firing`" + ` → ` + "`ok`" + ` resolves (no deliveries, unless
` + "`notify_on_resolve`" + ` is true: then the same audience gets a resolve notice). A firing rule does not fire
again until it has resolved. A snoozed rule (` + "`snoozed_until`" + ` in the future) changes state and records
its history but creates no deliveries. ` + "`min_calls`" + ` keeps a quiet window ` + "`ok`" + `, and a
` + "`week_ago`" + ` baseline compares the window with the same window a week earlier (a zero baseline keeps
the state). Every transition is kept in the rule's history (` + "`GET /v1/rules/{ruleId}/events`" + `).

Example: alert when more than 5% of at least 20 calls fail over 10 minutes, and say when it is over:

    {"name": "Search errors", "metric": "error_rate", "comparator": ">", "threshold": 0.05,
     "window_minutes": 10, "channels": ["in_app", "slack"], "min_calls": 20, "notify_on_resolve": true}

Example: alert when calls over the last hour fall under half of the same hour last week:

    {"name": "Traffic drop", "metric": "calls", "comparator": "<", "threshold": 0.5,
     "window_minutes": 60, "channels": ["email"], "baseline": "week_ago"}

Example: alert when calls over 30 minutes fall below what is usual at this hour of the week
(learnt from the last four weeks; a quiet Sunday night is usual, a quiet Monday morning is not):

    {"name": "Unusually quiet", "metric": "calls", "comparator": "<", "threshold": 0,
     "window_minutes": 30, "channels": ["in_app", "email"], "baseline": "seasonal", "sensitivity": "medium"}`

// describeRules documents the schemas of these routes.
func (s *Server) describeRules() {
	s.documentSchema(alerting.Rule{}, "An alert rule on one MCP. "+ruleStatesDoc, map[string]string{
		"id":                "The rule's id.",
		"mcp_id":            "The MCP the rule measures.",
		"name":              docRuleName,
		"metric":            docRuleMetric,
		"tool":              docRuleTool,
		"comparator":        docRuleComparator + " One of >, >=, <, <=.",
		"threshold":         docRuleThreshold,
		"window_minutes":    docRuleWindow,
		"channels":          docRuleChannels,
		"enabled":           docRuleEnabled,
		"state":             "ok or firing.",
		"last_fired_at":     "When the rule last fired; null if never.",
		"created_at":        "When the rule was created.",
		"notify_on_resolve": docRuleNotify,
		"snoozed_until":     docRuleSnooze,
		"min_calls":         docRuleMinCalls,
		"baseline":          docRuleBaseline,
		"renotify_minutes":  docRuleRenotify,
		"severity":          docRuleSeverity,
		"sensitivity":       docRuleSensitivity,
	})
	s.documentSchema(alerting.Band{}, "The band a seasonal rule expects at this hour of the week, learnt from the same window in the last four weeks.", map[string]string{
		"low":  "The band's lower edge (never below 0); a value under it breaches a rule with comparator < or <=.",
		"high": "The band's upper edge; a value over it breaches a rule with comparator > or >=.",
	})
	s.documentSchema(alerting.RuleEvent{}, "One transition in a rule's history.", map[string]string{
		"id":        "The event's id.",
		"kind":      "fired (ok → firing) or resolved (firing → ok). Recorded whether or not the rule was snoozed.",
		"reason":    "Why a firing ended without an evaluation resolving it: redefined (its condition changed), disabled or deleted; null otherwise. A deleted rule's history stays readable by its id.",
		"value":     "What the evaluation measured (with a baseline: the ratio to it); null when the metric had no value.",
		"threshold": "The rule's threshold at that moment.",
		"at":        "When the transition happened.",
		"expected":  "A seasonal rule's expected band at that moment, {low, high}; null for other rules.",
	})
	s.documentSchema(alerting.RuleEventPage{}, "A page of a rule's history, newest first.", map[string]string{
		"items":       "The events of this page.",
		"next_cursor": "Pass as cursor to get the next page; null on the last page.",
	})
}

var listRulesOp = huma.Operation{
	OperationID: "list-rules",
	Summary:     "List an MCP's alert rules",
	Description: "The MCP's rules, oldest first. 404 for an MCP that is not in your account.",
	Tags:        []string{"Alerting"},
	Errors:      []int{http.StatusNotFound},
}

func (s *Server) listRules(ctx context.Context, in *mcpRulesInput) (*ruleListOutput, error) {
	rules, err := s.opts.Rules.Rules(ctx, principal(ctx).AccountID, in.MCPID)
	if err != nil {
		return nil, err
	}
	return &ruleListOutput{Body: RuleList{Items: rules}}, nil
}

var createRuleOp = huma.Operation{
	OperationID:   "create-rule",
	Summary:       "Create an alert rule",
	DefaultStatus: http.StatusCreated,
	Description: `Owners and admins. Creates an enabled rule (unless ` + "`enabled`" + ` is false) in state ` + "`ok`" + `;
the next evaluation judges it. ` + ruleStatesDoc + `

A rule may name a channel nobody connected: it is accepted, and that channel gets nothing until
an admin connects it. 404 for an MCP that is not in your account; 422 for an invalid field. An
account holds at most 1,000 rules (configurable: ` + "`alerting.max_rules_per_account`" + `); creating one more
is 422 ` + "`limit_reached`" + ` until a rule is deleted.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) createRule(ctx context.Context, in *createRuleInput) (*createdRuleOutput, error) {
	b := in.Body
	r, err := s.opts.Rules.CreateRule(ctx, principal(ctx).AccountID, in.MCPID, alerting.RuleCreate{
		Name: b.Name, Metric: b.Metric, Tool: b.Tool, Comparator: b.Comparator, Threshold: b.Threshold,
		WindowMinutes: b.WindowMinutes, Channels: []string(b.Channels), Enabled: b.Enabled, Severity: b.Severity,
		NotifyOnResolve: b.NotifyOnResolve, SnoozedUntil: b.SnoozedUntil, MinCalls: b.MinCalls, Baseline: b.Baseline,
		RenotifyMinutes: b.RenotifyMinutes, Sensitivity: b.Sensitivity, ErrorKind: b.ErrorKind, MinSeverity: b.MinSeverity,
	})
	if err != nil {
		return nil, err
	}
	return &createdRuleOutput{Status: http.StatusCreated, Body: r}, nil
}

var getRuleOp = huma.Operation{
	OperationID: "get-rule",
	Summary:     "Read an alert rule",
	Description: "404 for a rule that is not in your account.",
	Tags:        []string{"Alerting"},
	Errors:      []int{http.StatusNotFound},
}

func (s *Server) getRule(ctx context.Context, in *ruleInput) (*ruleOutput, error) {
	r, err := s.opts.Rules.Rule(ctx, principal(ctx).AccountID, in.RuleID)
	if err != nil {
		return nil, err
	}
	return &ruleOutput{Body: r}, nil
}

var updateRuleOp = huma.Operation{
	OperationID: "update-rule",
	Summary:     "Change an alert rule",
	Description: `Owners and admins. Absent fields keep their value; ` + "`tool: null`" + ` means every item of
the MCP. The result is validated as a whole (a metric change is checked against the kept
threshold). Changing what the rule measures (metric, tool, comparator, threshold, window,
` + "`min_calls`" + `, ` + "`baseline`" + `) or disabling it puts it back to ` + "`ok`" + ` without resolving it: the next
evaluation judges the new definition from scratch. Renaming, changing channels,
` + "`notify_on_resolve`" + ` or the snooze keeps the state. Answers the whole rule.

Snooze for an hour: ` + "`{\"snoozed_until\": \"2026-11-25T18:00:00Z\"}`" + `; end a snooze: ` + "`{\"snoozed_until\": null}`" + `.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) updateRule(ctx context.Context, in *updateRuleInput) (*ruleOutput, error) {
	b := in.Body
	r, err := s.opts.Rules.UpdateRule(ctx, principal(ctx).AccountID, in.RuleID, alerting.RuleUpdate{
		Name: b.Name, Metric: b.Metric, Tool: b.Tool.NullableString, Comparator: b.Comparator, Threshold: b.Threshold,
		WindowMinutes: b.WindowMinutes, Channels: []string(b.Channels), Enabled: b.Enabled, Severity: b.Severity,
		NotifyOnResolve: b.NotifyOnResolve, SnoozedUntil: b.SnoozedUntil.NullableTime, MinCalls: b.MinCalls,
		Baseline: b.Baseline.NullableString, RenotifyMinutes: b.RenotifyMinutes.NullableInt,
		Sensitivity: b.Sensitivity.NullableString, ErrorKind: b.ErrorKind.NullableString, MinSeverity: b.MinSeverity.NullableString,
	})
	if err != nil {
		return nil, err
	}
	return &ruleOutput{Body: r}, nil
}

var deleteRuleOp = huma.Operation{
	OperationID:   "delete-rule",
	Summary:       "Delete an alert rule",
	DefaultStatus: http.StatusNoContent,
	Description:   "Owners and admins. The deliveries the rule created stay (inbox items keep the rule's name).",
	Tags:          []string{"Alerting"},
	Errors:        []int{http.StatusNotFound},
}

func (s *Server) deleteRule(ctx context.Context, in *ruleInput) (*struct{}, error) {
	return nil, s.opts.Rules.DeleteRule(ctx, principal(ctx).AccountID, in.RuleID)
}

// describeEvaluate documents the schemas of these routes.
func (s *Server) describeEvaluate() {
	s.documentSchema(alerting.Evaluation{}, "The outcome of evaluating a rule now.", map[string]string{
		"state":          "The rule's state after the evaluation: ok or firing.",
		"value":          "The measured value over the rule's window; null when the metric has no value (p95_ms without measured calls).",
		"fired":          "Whether this evaluation fired the rule (ok → firing).",
		"resolved":       "Whether this evaluation resolved the rule (firing → ok).",
		"baseline_value": "With a week_ago baseline: the same window's value seven days earlier (value is then the ratio to it); null without a baseline or when it has no value.",
		"calls":          "Calls in the rule's window (its tool's tools/call items for a rule naming a tool): what min_calls is checked against.",
		"deliveries":     "How many deliveries this evaluation created: 0 when it changed nothing, while the rule is snoozed, and on a resolve without notify_on_resolve.",
		"expected":       "A seasonal rule's expected band at this hour of the week, {low, high}; null for other rules and while it has fewer than two weeks of history (it then keeps its state).",
	})
}

var evaluateRuleOp = huma.Operation{
	OperationID: "evaluate-rule",
	Summary:     "Evaluate an alert rule now",
	Description: `Owners and admins (it can fire the rule, which notifies the team). Measures the rule over
its window ending now and applies the same transition as the evaluator, exactly once even when
the evaluator runs at the same moment: ` + "`fired`" + ` is true only for the evaluation that fired it.
A disabled rule is measured and reported but its state does not change. The answer also says
whether it resolved the rule, how many calls the window held (for ` + "`min_calls`" + `), the baseline's
value (for ` + "`baseline: \"week_ago\"`" + `, when ` + "`value`" + ` is the ratio) and how many deliveries were created
(0 while snoozed). 503 when metrics cannot be read; the state is then left as it was.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable},
}

type ruleEventsInput struct {
	RuleID string `path:"ruleId" doc:"The rule's id."`
	PageQuery
}

type ruleEventsOutput struct {
	Body alerting.RuleEventPage
}

var ruleEventsOp = huma.Operation{
	OperationID: "list-rule-events",
	Summary:     "Read an alert rule's history",
	Description: `Every transition of the rule, newest first (ties by id), paginated with ` + "`limit`" + `
(default 50, at most 200) and ` + "`cursor`" + `: ` + "`fired`" + ` (ok → firing) and ` + "`resolved`" + ` (firing → ok),
with the value measured and the threshold at that moment. Transitions made while the rule was snoozed
are listed too. Editing a rule's definition resets it to ok without a ` + "`resolved`" + ` event. Deleting the
rule deletes its history. 404 for a rule that is not in your account; a malformed cursor is 400.

Example: ` + "`{\"items\": [{\"id\": \"rev_…\", \"kind\": \"resolved\", \"value\": 0.01, \"threshold\": 0.05, \"at\": \"2026-11-25T10:07:00Z\"}, {\"id\": \"rev_…\", \"kind\": \"fired\", \"value\": 0.2, \"threshold\": 0.05, \"at\": \"2026-11-25T10:01:00Z\"}], \"next_cursor\": null}`" + `.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) listRuleEvents(ctx context.Context, in *ruleEventsInput) (*ruleEventsOutput, error) {
	f := alerting.RuleEventFilter{Limit: in.Limit, Cursor: in.Cursor}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	page, err := s.opts.Rules.RuleEvents(ctx, principal(ctx).AccountID, in.RuleID, f)
	if err != nil {
		return nil, err
	}
	return &ruleEventsOutput{Body: page}, nil
}

func (s *Server) evaluateRule(ctx context.Context, in *ruleInput) (*evaluationOutput, error) {
	ev, err := s.opts.Evaluator.EvaluateRule(ctx, principal(ctx).AccountID, in.RuleID, time.Now())
	if err != nil {
		return nil, err
	}
	return &evaluationOutput{Body: ev}, nil
}
