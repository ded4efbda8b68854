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
	docRuleName       = "What the rule is called in notifications; 1 to 200 characters."
	docRuleMetric     = "What the rule measures over its window: error_rate (errors / calls, a fraction: 0.05 is 5%; 0 with no calls), errors, calls (every item, or the tool's tools/call items), p95_ms (95th percentile duration_ms; no value without measured calls, which never breaches)."
	docRuleTool       = "Restrict the rule to the tools/call items of this tool; null or absent means every item of the MCP."
	docRuleComparator = "How the value is compared with the threshold."
	docRuleThreshold  = "The value the metric is compared with; not negative, and at most 1 for error_rate."
	docRuleWindow     = "The window measured: the last window_minutes minutes, 1 to 1440."
	docRuleChannels   = "Where a firing is delivered, a non-empty subset of in_app, email, slack, discord. A team-chat channel nobody connected is accepted and simply gets nothing."
	docRuleEnabled    = "Disabled rules are not evaluated by the evaluator."
)

type newRuleRequest struct {
	Name          string   `json:"name" doc:"What the rule is called in notifications; 1 to 200 characters."`
	Metric        string   `json:"metric" enum:"error_rate,errors,calls,p95_ms" doc:"What the rule measures over its window: error_rate (errors / calls, a fraction: 0.05 is 5%; 0 with no calls), errors, calls (every item, or the tool's tools/call items), p95_ms (95th percentile duration_ms; no value without measured calls, which never breaches)."`
	Tool          *string  `json:"tool,omitempty" nullable:"true" doc:"Restrict the rule to the tools/call items of this tool; null or absent means every item of the MCP."`
	Comparator    string   `json:"comparator" enum:">,>=,<,<=" doc:"How the value is compared with the threshold."`
	Threshold     float64  `json:"threshold" doc:"The value the metric is compared with; not negative, and at most 1 for error_rate."`
	WindowMinutes int      `json:"window_minutes" minimum:"1" maximum:"1440" doc:"The window measured: the last window_minutes minutes, 1 to 1440."`
	Channels      []string `json:"channels" doc:"Where a firing is delivered, a non-empty subset of in_app, email, slack, discord. A team-chat channel nobody connected is accepted and simply gets nothing."`
	Enabled       *bool    `json:"enabled,omitempty" doc:"Default true. Disabled rules are not evaluated by the evaluator."`
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

type rulePatch struct {
	Name          *string        `json:"name,omitempty" doc:"What the rule is called in notifications; 1 to 200 characters."`
	Metric        *string        `json:"metric,omitempty" enum:"error_rate,errors,calls,p95_ms" doc:"What the rule measures; see the create body."`
	Tool          nullableString `json:"tool,omitzero"`
	Comparator    *string        `json:"comparator,omitempty" enum:">,>=,<,<=" doc:"How the value is compared with the threshold."`
	Threshold     *float64       `json:"threshold,omitempty" doc:"The value the metric is compared with; not negative, and at most 1 for error_rate."`
	WindowMinutes *int           `json:"window_minutes,omitempty" minimum:"1" maximum:"1440" doc:"The window measured, 1 to 1440 minutes."`
	Channels      []string       `json:"channels,omitempty" doc:"Where a firing is delivered, a non-empty subset of in_app, email, slack, discord. Absent or null: unchanged."`
	Enabled       *bool          `json:"enabled,omitempty" doc:"Disabled rules are not evaluated by the evaluator."`
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
connected, nothing for one that is not); ` + "`firing`" + ` → ` + "`ok`" + ` resolves (no deliveries). A firing
rule does not fire again until it has resolved.`

// describeRules documents the schemas of these routes.
func (s *Server) describeRules() {
	s.documentSchema(alerting.Rule{}, "An alert rule on one MCP. "+ruleStatesDoc, map[string]string{
		"id":             "The rule's id.",
		"mcp_id":         "The MCP the rule measures.",
		"name":           docRuleName,
		"metric":         docRuleMetric,
		"tool":           docRuleTool,
		"comparator":     docRuleComparator + " One of >, >=, <, <=.",
		"threshold":      docRuleThreshold,
		"window_minutes": docRuleWindow,
		"channels":       docRuleChannels,
		"enabled":        docRuleEnabled,
		"state":          "ok or firing.",
		"last_fired_at":  "When the rule last fired; null if never.",
		"created_at":     "When the rule was created.",
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
		WindowMinutes: b.WindowMinutes, Channels: b.Channels, Enabled: b.Enabled,
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
threshold). Changing what the rule measures (metric, tool, comparator, threshold, window) or
disabling it puts it back to ` + "`ok`" + ` without resolving it: the next evaluation judges the new
definition from scratch. Renaming or changing channels keeps the state. Answers the whole rule.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) updateRule(ctx context.Context, in *updateRuleInput) (*ruleOutput, error) {
	b := in.Body
	r, err := s.opts.Rules.UpdateRule(ctx, principal(ctx).AccountID, in.RuleID, alerting.RuleUpdate{
		Name: b.Name, Metric: b.Metric, Tool: b.Tool.NullableString, Comparator: b.Comparator, Threshold: b.Threshold,
		WindowMinutes: b.WindowMinutes, Channels: b.Channels, Enabled: b.Enabled,
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
		"state": "The rule's state after the evaluation: ok or firing.",
		"value": "The measured value over the rule's window; null when the metric has no value (p95_ms without measured calls).",
		"fired": "Whether this evaluation fired the rule (ok → firing) and created its deliveries.",
	})
}

var evaluateRuleOp = huma.Operation{
	OperationID: "evaluate-rule",
	Summary:     "Evaluate an alert rule now",
	Description: `Owners and admins (it can fire the rule, which notifies the team). Measures the rule over
its window ending now and applies the same transition as the evaluator, exactly once even when
the evaluator runs at the same moment: ` + "`fired`" + ` is true only for the evaluation that fired it.
A disabled rule is measured and reported but its state does not change. 503 when metrics cannot
be read; the state is then left as it was.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable},
}

func (s *Server) evaluateRule(ctx context.Context, in *ruleInput) (*evaluationOutput, error) {
	ev, err := s.opts.Evaluator.EvaluateRule(ctx, principal(ctx).AccountID, in.RuleID, time.Now())
	if err != nil {
		return nil, err
	}
	return &evaluationOutput{Body: ev}, nil
}
