package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
)

// SLOList is the answer of GET /v1/mcps/{id}/slos.
type SLOList struct {
	Items []alerting.SLOStatus `json:"items" doc:"The MCP's SLOs, oldest first, each with its figures now (series empty: read one SLO for it)."`
}

const sloDoc = `A service level objective: "99.5% of search calls succeed over 28 days". Its indicator (sli) is
the fraction of good calls over its window; the error budget is the bad calls the objective allows
(total), those there were (spent) and the fraction still unspent (remaining, negative once
overspent). A burn rate is how many times faster than "exactly on budget" the budget is being spent
over a window; state follows the SRE Workbook's multiwindow, multi-burn-rate alerts:
page when both the 1 h and 5 min burn rates exceed 14.4, or both the 6 h and 30 min exceed 6; ticket
when both the 3 d and 6 h exceed 1; ok otherwise. The evaluator judges every enabled SLO each pass
(beside the rules); a rise to page, or to ticket unless severity is page, is delivered like a rule
firing (inbox, email, team chat; none while snoozed), saying how much budget is left and how long it
lasts at this rate; back to ok sends a resolve notice with notify_on_resolve.

An availability SLO counts every call, bad when it failed with one of error_kinds (default: every
kind but invalid_params and unknown_tool, the client's mistakes; an error stored without a kind
counts bad). A latency SLO counts the calls with a duration, bad when slower than threshold_ms,
which is one of the ladder 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000
(the rollups count the calls at or under each; other values answer 422). The 5 min to 6 h windows
are read from events, the 3 d window and the SLO's window from the SLO rollups (whole clock hours,
the current one included). GET /v1/slos/{sloId}/events lists the SLO's history.

Example: {"name": "Search succeeds", "kind": "availability", "objective": 0.995, "tool": "search",
"channels": ["in_app", "email"]}`

type newSLORequest struct {
	Name            string     `json:"name" doc:"What the SLO is called in notifications; 1 to 200 characters."`
	Kind            string     `json:"kind" enum:"availability,latency" doc:"availability (bad: an error of one of error_kinds) or latency (bad: slower than threshold_ms)."`
	Objective       float64    `json:"objective" doc:"The good fraction promised, 0.5 to 0.99999 (99.5% is 0.995)."`
	ThresholdMs     *float64   `json:"threshold_ms,omitempty" enum:"50,100,200,300,500,750,1000,1500,2000,3000,5000,10000,30000" doc:"Latency SLOs only (required there): a call slower than this many milliseconds is bad; one of the ladder."`
	Tool            *string    `json:"tool,omitempty" nullable:"true" doc:"The tool whose tools/call items count; null or absent: every item of the MCP."`
	ErrorKinds      []string   `json:"error_kinds,omitempty" doc:"Availability SLOs only: the error kinds that count bad. Default: every kind but invalid_params and unknown_tool (the client's mistakes)."`
	WindowDays      *int       `json:"window_days,omitempty" minimum:"1" maximum:"90" doc:"The SLO's window in days, default 28."`
	Channels        []string   `json:"channels" doc:"Where alerts are delivered, a non-empty subset of in_app, email, slack, discord."`
	Severity        *string    `json:"severity,omitempty" enum:"ticket,page" doc:"The least state that notifies: ticket (default: tickets and pages) or page (pages only; tickets are recorded, not delivered)."`
	Enabled         *bool      `json:"enabled,omitempty" doc:"Default true. Disabled SLOs are read but not alerted on."`
	SnoozedUntil    *time.Time `json:"snoozed_until,omitempty" nullable:"true" doc:"RFC 3339 or null: until then state changes create no deliveries."`
	NotifyOnResolve *bool      `json:"notify_on_resolve,omitempty" doc:"Default false: whether going back to ok notifies."`
	RenotifyMinutes *int       `json:"renotify_minutes,omitempty" nullable:"true" minimum:"5" maximum:"10080" doc:"null (default) or 5 to 10080: while the SLO stays in a state that notifies, deliver its alert again every so many minutes (\"Still paging: …\", with the budget left then)."`
}

type sloPatch struct {
	Name            *string        `json:"name,omitempty" doc:"1 to 200 characters."`
	Objective       *float64       `json:"objective,omitempty" doc:"0.5 to 0.99999."`
	ThresholdMs     *float64       `json:"threshold_ms,omitempty" enum:"50,100,200,300,500,750,1000,1500,2000,3000,5000,10000,30000" doc:"Latency SLOs only; one of the ladder."`
	Tool            nullableString `json:"tool,omitzero"`
	ErrorKinds      []string       `json:"error_kinds,omitempty" doc:"Availability SLOs only; absent: unchanged."`
	WindowDays      *int           `json:"window_days,omitempty" minimum:"1" maximum:"90" doc:"1 to 90 days."`
	Channels        []string       `json:"channels,omitempty" doc:"Absent: unchanged."`
	Severity        *string        `json:"severity,omitempty" enum:"ticket,page" doc:"ticket or page."`
	Enabled         *bool          `json:"enabled,omitempty" doc:"Disabled SLOs are not alerted on."`
	SnoozedUntil    nullableTime   `json:"snoozed_until,omitzero"`
	NotifyOnResolve *bool          `json:"notify_on_resolve,omitempty" doc:"Whether going back to ok notifies."`
	RenotifyMinutes nullableInt    `json:"renotify_minutes,omitzero"`
}

type createSLOInput struct {
	MCPID string `path:"id" doc:"The MCP's id."`
	Body  newSLORequest
}

type sloInput struct {
	SLOID string `path:"sloId" doc:"The SLO's id."`
}

type updateSLOInput struct {
	SLOID string `path:"sloId" doc:"The SLO's id."`
	Body  sloPatch
}

type sloOutput struct {
	Body alerting.SLOStatus
}

type createdSLOOutput struct {
	Status int
	Body   alerting.SLOStatus
}

type sloListOutput struct {
	Body SLOList
}

func (s *Server) describeSLOs() {
	s.documentSchema(alerting.SLOStatus{}, sloDoc, map[string]string{
		"state":              "What the burn rates say now: ok, ticket or page (see the schema's description).",
		"sli":                "The good fraction over the window; null without calls.",
		"error_budget":       "total: the bad calls the objective allows over the window; spent: the bad calls there were; remaining: the unspent fraction (1 untouched, 0 spent, negative overspent).",
		"burn_rates":         `Burn rate per window: "5m", "30m", "1h", "6h", "3d" (1 spends exactly the budget over the SLO's window).`,
		"budget_lasts_hours": "How long the remaining budget lasts at the burn rate of the alerting condition's long window (1 h when ok); null when nothing burns.",
		"series":             "The daily indicator over the window (GET of one SLO only): day, total, bad, sli, burn_rate.",
		"last_alert_at":      "When the SLO last raised an alert; null if never.",
	})
}

var listSLOsOp = huma.Operation{OperationID: "list-slos", Summary: "List an MCP's SLOs", Description: sloDoc, Tags: []string{"SLOs"},
	Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable}}

var createSLOOp = huma.Operation{OperationID: "create-slo", Summary: "Create an SLO", DefaultStatus: http.StatusCreated,
	Description: "Owners and admins. " + sloDoc, Tags: []string{"SLOs"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}}

var getSLOOp = huma.Operation{OperationID: "get-slo", Summary: "Read an SLO with its figures and series", Description: sloDoc, Tags: []string{"SLOs"},
	Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable}}

var updateSLOOp = huma.Operation{OperationID: "update-slo", Summary: "Change an SLO",
	Description: "Owners and admins. Absent fields keep their value. Changing what the SLO measures (objective, threshold, tool, error kinds, window) or disabling it puts its alert state back to ok.",
	Tags:        []string{"SLOs"}, Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}}

var deleteSLOOp = huma.Operation{OperationID: "delete-slo", Summary: "Delete an SLO", DefaultStatus: http.StatusNoContent,
	Description: "Owners and admins. Its deliveries stay.", Tags: []string{"SLOs"}, Errors: []int{http.StatusNotFound}}

type sloEventsInput struct {
	SLOID string `path:"sloId" doc:"The SLO's id."`
	PageQuery
}

type sloEventsOutput struct {
	Body alerting.SLOEventPage
}

var sloEventsOp = huma.Operation{OperationID: "list-slo-events", Summary: "Read an SLO's history", Tags: []string{"SLOs"},
	Description: `Every change of the SLO's alert state and every re-notification, newest first (ties by id),
paginated with ` + "`limit`" + ` (default 50, at most 200) and ` + "`cursor`" + `: kind ` + "`page`" + ` or ` + "`ticket`" + ` (the state it rose or fell
to), ` + "`resolved`" + ` (back to ok) or ` + "`renotified`" + ` (still in state, alert delivered again), with state, the error budget
remaining (fraction) and the burn rates it was decided on. Changes made while snoozed are listed too.
Editing what the SLO measures resets it to ok without an event; deleting it deletes its history. 404
for an SLO that is not in your account; a malformed cursor is 400.

Example: ` + "`{\"items\": [{\"id\": \"sev_…\", \"kind\": \"page\", \"state\": \"page\", \"budget_remaining\": 0.83, \"burn_rates\": {\"5m\": 40, \"30m\": 38, \"1h\": 36, \"6h\": 6.2, \"3d\": 1.3}, \"at\": \"2026-11-25T10:01:00Z\"}], \"next_cursor\": null}`" + `.`,
	Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity}}

func (s *Server) listSLOEvents(ctx context.Context, in *sloEventsInput) (*sloEventsOutput, error) {
	h, ok := s.opts.SLOs.(alerting.SLOHistory)
	if !ok {
		return nil, huma.Error404NotFound("SLO history is not available")
	}
	f := alerting.RuleEventFilter{Limit: in.Limit, Cursor: in.Cursor}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	page, err := h.SLOEvents(ctx, principal(ctx).AccountID, in.SLOID, f)
	if err != nil {
		return nil, err
	}
	return &sloEventsOutput{Body: page}, nil
}

func (s *Server) listSLOs(ctx context.Context, in *mcpRulesInput) (*sloListOutput, error) {
	slos, err := s.opts.SLOs.SLOs(ctx, principal(ctx).AccountID, in.MCPID)
	if err != nil {
		return nil, err
	}
	items, err := s.sloStatuses(ctx, slos, false)
	if err != nil {
		return nil, err
	}
	return &sloListOutput{Body: SLOList{Items: items}}, nil
}

func (s *Server) createSLO(ctx context.Context, in *createSLOInput) (*createdSLOOutput, error) {
	b := in.Body
	slo, err := s.opts.SLOs.CreateSLO(ctx, principal(ctx).AccountID, in.MCPID, alerting.SLOCreate{
		Name: b.Name, Kind: b.Kind, Objective: b.Objective, ThresholdMs: b.ThresholdMs, Tool: b.Tool, ErrorKinds: b.ErrorKinds,
		WindowDays: b.WindowDays, Channels: b.Channels, Severity: b.Severity, Enabled: b.Enabled, SnoozedUntil: b.SnoozedUntil,
		NotifyOnResolve: b.NotifyOnResolve, RenotifyMinutes: b.RenotifyMinutes})
	if err != nil {
		return nil, err
	}
	st, err := s.sloStatuses(ctx, []alerting.SLO{slo}, false)
	if err != nil {
		return nil, err
	}
	return &createdSLOOutput{Status: http.StatusCreated, Body: st[0]}, nil
}

func (s *Server) getSLO(ctx context.Context, in *sloInput) (*sloOutput, error) {
	slo, err := s.opts.SLOs.SLO(ctx, principal(ctx).AccountID, in.SLOID)
	if err != nil {
		return nil, err
	}
	st, err := s.sloStatuses(ctx, []alerting.SLO{slo}, true)
	if err != nil {
		return nil, err
	}
	return &sloOutput{Body: st[0]}, nil
}

func (s *Server) updateSLO(ctx context.Context, in *updateSLOInput) (*sloOutput, error) {
	b := in.Body
	slo, err := s.opts.SLOs.UpdateSLO(ctx, principal(ctx).AccountID, in.SLOID, alerting.SLOUpdate{
		Name: b.Name, Objective: b.Objective, ThresholdMs: b.ThresholdMs, Tool: b.Tool.NullableString, ErrorKinds: b.ErrorKinds,
		WindowDays: b.WindowDays, Channels: b.Channels, Severity: b.Severity, Enabled: b.Enabled,
		SnoozedUntil: b.SnoozedUntil.NullableTime, NotifyOnResolve: b.NotifyOnResolve, RenotifyMinutes: b.RenotifyMinutes.NullableInt})
	if err != nil {
		return nil, err
	}
	st, err := s.sloStatuses(ctx, []alerting.SLO{slo}, false)
	if err != nil {
		return nil, err
	}
	return &sloOutput{Body: st[0]}, nil
}

func (s *Server) deleteSLO(ctx context.Context, in *sloInput) (*struct{}, error) {
	return nil, s.opts.SLOs.DeleteSLO(ctx, principal(ctx).AccountID, in.SLOID)
}

// sloStatuses reads the figures of slos now, in one read of their
// indicators, and each one's daily series when series is true.
func (s *Server) sloStatuses(ctx context.Context, slos []alerting.SLO, series bool) ([]alerting.SLOStatus, error) {
	return SLOStatuses(ctx, s.opts.SLI, slos, series, time.Now())
}

// SLOStatuses reads the figures of slos at now from sli (one read for all
// of them) and, when series is true, each one's daily series.
func SLOStatuses(ctx context.Context, sli analytics.SLIReader, slos []alerting.SLO, series bool, now time.Time) ([]alerting.SLOStatus, error) {
	out := make([]alerting.SLOStatus, len(slos))
	if len(slos) == 0 {
		return out, nil
	}
	qs := make([]analytics.SLIQuery, len(slos))
	for i, slo := range slos {
		qs[i] = slo.SLIQuery()
	}
	rds, err := sli.SLICounts(ctx, now, alerting.SLOMinutes(), alerting.SLOHours(), qs)
	if err != nil {
		return nil, err
	}
	for i, slo := range slos {
		out[i] = alerting.SLOStatus{SLO: slo, SLOFigures: slo.Figures(rds[i]), Series: []alerting.SLOPoint{}}
		out[i].State = out[i].Alert
		if series {
			pts, err := sli.SLISeries(ctx, now, qs[i])
			if err != nil {
				return nil, err
			}
			out[i].Series = slo.Points(pts)
		}
	}
	return out, nil
}
