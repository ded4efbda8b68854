package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
)

// ProbeRequest is the body of POST /v1/mcps/{id}/probes.
type ProbeRequest struct {
	URL             string            `json:"url" minLength:"1" maxLength:"2048" doc:"The MCP server's Streamable HTTP endpoint (http:// or https://). Its host must resolve to public addresses (unless the installation sets probes.allow_private)." example:"https://mcp.example.com/mcp"`
	IntervalSeconds *int              `json:"interval_seconds,omitempty" doc:"Seconds between checks, 30 to 3600; default 60." example:"60"`
	TimeoutMs       *int              `json:"timeout_ms,omitempty" doc:"How long one check may take, 1000 to 30000 ms; default 10000." example:"10000"`
	Headers         map[string]string `json:"headers,omitempty" doc:"Headers every check sends, e.g. an Authorization header: at most 10, 8 KiB together. Stored encrypted; reads show only a hint of each value." example:"{\"Authorization\": \"Bearer sk-probe-1234\"}"`
	Enabled         *bool             `json:"enabled,omitempty" doc:"Default true. A disabled probe keeps its state and is not checked."`
}

// ProbePatch changes a probe; fields left out stay.
type ProbePatch struct {
	URL             *string            `json:"url,omitempty" minLength:"1" maxLength:"2048" doc:"A new URL resets the status to unknown and checks it within seconds."`
	IntervalSeconds *int               `json:"interval_seconds,omitempty"`
	TimeoutMs       *int               `json:"timeout_ms,omitempty"`
	Headers         *map[string]string `json:"headers,omitempty" doc:"Replaces the headers whole; {} removes them."`
	Enabled         *bool              `json:"enabled,omitempty"`
}

// ProbePath names a probe in a path.
type ProbePath struct {
	ProbeID string `path:"probeId" doc:"The probe's id." example:"prb_3kTMd9Xq0bE7vR2a"`
}

// ProbeList is an MCP's probes.
type ProbeList struct {
	Items []alerting.Probe `json:"items"`
}

// BadgeBody is the answer of POST /v1/probes/{probeId}/badge.
type BadgeBody struct {
	URL string `json:"url" doc:"The badge's public address (no credential needed): an SVG with the probe's status and 30-day uptime. Shown once; a new POST replaces it."`
}

type probeOutput struct{ Body alerting.Probe }

const probesDoc = "A probe checks the MCP server from the outside every `interval_seconds`: it speaks MCP over Streamable HTTP " +
	"(`server/discover` for servers of the 2026-07-28 protocol, else `initialize`, `notifications/initialized`, then `tools/list`, " +
	"and it ends the session with an HTTP DELETE), as client `mcpscope-prober`. A check fails with a kind: `dns`, `connect`, `tls`, " +
	"`timeout`, `http_status`, `protocol` or `auth` (401/403). `status` is the last check's (`unknown` before the first); " +
	"`uptime` the share of good checks over 24 hours, 7 and 30 days (null without checks). A TLS certificate expiring within 14 days " +
	"sets `warning`. The tools a check lists feed the MCP's tool inventory. Rule metric `probe_down` counts consecutive failed checks. " +
	"See docs/probes.md."

var createProbeOp = huma.Operation{
	OperationID:   "create-probe",
	Summary:       "Add a probe",
	Description:   "Owners and admins. " + probesDoc + " An account holds at most `probes.max_per_account` probes (default 20; past it 422 `limit_reached`). A URL whose host resolves to a loopback, private, link-local or metadata address is 422 `invalid` at `body.url` (and the check refuses such addresses again at every run).",
	Tags:          []string{"Probes"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) createProbe(ctx context.Context, in *struct {
	MCPPath
	Body ProbeRequest
}) (*probeOutput, error) {
	b := in.Body
	p, err := s.opts.Probes.CreateProbe(ctx, principal(ctx).AccountID, in.ID, alerting.ProbeCreate{URL: b.URL,
		IntervalSeconds: b.IntervalSeconds, TimeoutMs: b.TimeoutMs, Headers: b.Headers, Enabled: b.Enabled})
	if err != nil {
		return nil, err
	}
	return &probeOutput{Body: p}, nil
}

var listProbesOp = huma.Operation{
	OperationID: "list-probes",
	Summary:     "List an MCP's probes",
	Description: probesDoc,
	Tags:        []string{"Probes"},
	Errors:      []int{http.StatusNotFound},
}

func (s *Server) listProbes(ctx context.Context, in *MCPPath) (*struct{ Body ProbeList }, error) {
	ps, err := s.opts.Probes.Probes(ctx, principal(ctx).AccountID, in.ID)
	if err != nil {
		return nil, err
	}
	if ps == nil {
		ps = []alerting.Probe{}
	}
	return &struct{ Body ProbeList }{Body: ProbeList{Items: ps}}, nil
}

var getProbeOp = huma.Operation{
	OperationID: "get-probe",
	Summary:     "Get a probe",
	Description: probesDoc,
	Tags:        []string{"Probes"},
	Errors:      []int{http.StatusNotFound},
}

func (s *Server) getProbe(ctx context.Context, in *ProbePath) (*probeOutput, error) {
	p, err := s.opts.Probes.Probe(ctx, principal(ctx).AccountID, in.ProbeID)
	if err != nil {
		return nil, err
	}
	return &probeOutput{Body: p}, nil
}

var updateProbeOp = huma.Operation{
	OperationID: "update-probe",
	Summary:     "Change a probe",
	Description: "Owners and admins. Fields left out stay; the same bounds as at creation.",
	Tags:        []string{"Probes"},
	Errors:      []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) updateProbe(ctx context.Context, in *struct {
	ProbePath
	Body ProbePatch
}) (*probeOutput, error) {
	b := in.Body
	p, err := s.opts.Probes.UpdateProbe(ctx, principal(ctx).AccountID, in.ProbeID, alerting.ProbeUpdate{URL: b.URL,
		IntervalSeconds: b.IntervalSeconds, TimeoutMs: b.TimeoutMs, Headers: b.Headers, Enabled: b.Enabled})
	if err != nil {
		return nil, err
	}
	return &probeOutput{Body: p}, nil
}

var deleteProbeOp = huma.Operation{
	OperationID:   "delete-probe",
	Summary:       "Delete a probe",
	Description:   "Owners and admins. Its badge stops working; its results age out with the stored telemetry.",
	Tags:          []string{"Probes"},
	DefaultStatus: http.StatusNoContent,
	Errors:        []int{http.StatusNotFound},
}

func (s *Server) deleteProbe(ctx context.Context, in *ProbePath) (*struct{}, error) {
	return nil, s.opts.Probes.DeleteProbe(ctx, principal(ctx).AccountID, in.ProbeID)
}

type probeResultsInput struct {
	ProbePath
	PageQuery
	From time.Time `query:"from" doc:"RFC 3339; default 24 hours before to." example:"2026-11-20T00:00:00Z"`
	To   time.Time `query:"to" doc:"RFC 3339; default now. At most 31 days after from." example:"2026-11-21T00:00:00Z"`
}

var probeResultsOp = huma.Operation{
	OperationID: "list-probe-results",
	Summary:     "List a probe's checks",
	Description: "The probe's checks in [from, to], newest first, paginated (`limit`, `cursor`). `error` is `kind: detail` for a failed check; `schema_hash` the hash of the tools/list answer (its tools' names and canonical schema hashes). from after to is 422 `invalid_range`; more than 31 days 422 `range_too_large`.",
	Tags:        []string{"Probes"},
	Errors:      []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) listProbeResults(ctx context.Context, in *probeResultsInput) (*struct{ Body alerting.ProbeResultPage }, error) {
	page, err := s.opts.Probes.ProbeResults(ctx, principal(ctx).AccountID, in.ProbeID,
		alerting.ProbeResultFilter{From: in.From, To: in.To, Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return nil, err
	}
	return &struct{ Body alerting.ProbeResultPage }{Body: page}, nil
}

var createBadgeOp = huma.Operation{
	OperationID:   "create-probe-badge",
	Summary:       "Make a public status badge",
	Description:   "Owners and admins. Opt-in: answers an unguessable URL serving an SVG with the probe's status and 30-day uptime, with no credential, and nothing else about the probe, its MCP or the account. A new POST replaces the URL (the old one stops working); DELETE revokes it.",
	Tags:          []string{"Probes"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusNotFound},
}

func (s *Server) createBadge(ctx context.Context, in *ProbePath) (*struct{ Body BadgeBody }, error) {
	token, err := s.opts.Badges.CreateBadge(ctx, principal(ctx).AccountID, in.ProbeID)
	if err != nil {
		return nil, err
	}
	return &struct{ Body BadgeBody }{Body: BadgeBody{URL: s.opts.BaseURL + "/badges/" + token + ".svg"}}, nil
}

var deleteBadgeOp = huma.Operation{
	OperationID:   "delete-probe-badge",
	Summary:       "Revoke the status badge",
	Description:   "Owners and admins. The badge URL answers 404 from then on.",
	Tags:          []string{"Probes"},
	DefaultStatus: http.StatusNoContent,
	Errors:        []int{http.StatusNotFound},
}

func (s *Server) deleteBadge(ctx context.Context, in *ProbePath) (*struct{}, error) {
	return nil, s.opts.Badges.DeleteBadge(ctx, principal(ctx).AccountID, in.ProbeID)
}

var getBadgeOp = huma.Operation{
	OperationID: "get-probe-badge",
	Summary:     "A probe's public badge",
	Description: "No credential: the SVG of the badge the token names (status and 30-day uptime), 404 once revoked.",
	Tags:        []string{"Probes"},
	Errors:      []int{http.StatusNotFound},
}

type badgeInput struct {
	File string `path:"file" doc:"The badge token followed by .svg."`
}

type badgeOutput struct {
	ContentType  string `header:"Content-Type"`
	CacheControl string `header:"Cache-Control"`
	Body         []byte
}

func (s *Server) getBadge(ctx context.Context, in *badgeInput) (*badgeOutput, error) {
	token := in.File
	if len(token) > 4 && token[len(token)-4:] == ".svg" {
		token = token[:len(token)-4]
	}
	svg, err := s.opts.Badges.BadgeSVG(ctx, token)
	if err != nil {
		return nil, err
	}
	return &badgeOutput{ContentType: "image/svg+xml", CacheControl: "no-cache, max-age=0", Body: svg}, nil
}

type downPeriodsInput struct {
	MCPPath
	From time.Time `query:"from" doc:"RFC 3339; default 24 hours before to." example:"2026-11-20T00:00:00Z"`
	To   time.Time `query:"to" doc:"RFC 3339; default now. At most 400 days after from." example:"2026-11-21T00:00:00Z"`
}

var downPeriodsOp = huma.Operation{
	OperationID: "list-down-periods",
	Summary:     "List an MCP's down periods",
	Description: "The periods in [from, to] in which a probe of the MCP failed its checks, oldest first, for the marks on the MCP's charts: failed checks are counted per five minutes (UTC), and failed five-minute steps that follow each other make one period, from its first failed check to its last (`checks` counts them, `error` is one of their errors, `kind: detail`). An MCP without probes has none. `truncated` is true when the range held more than a week of failed steps (the periods stop there). from after to is 422 `invalid_range`; more than 400 days 422 `range_too_large`. See docs/probes.md.",
	Tags:        []string{"Probes"},
	Errors:      []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) listDownPeriods(ctx context.Context, in *downPeriodsInput) (*struct{ Body alerting.DownPeriodList }, error) {
	list, err := s.opts.Probes.DownPeriods(ctx, principal(ctx).AccountID, in.ID, in.From, in.To)
	if err != nil {
		return nil, err
	}
	return &struct{ Body alerting.DownPeriodList }{Body: list}, nil
}
