package httpapi

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// RangeQuery is the date range every metric read takes. It is parsed by
// analytics.ParseRange (not by huma) so that a malformed date is the
// contract's 400 invalid_date rather than a generic validation error. It
// must stay exported: huma skips unexported embedded structs.
type RangeQuery struct {
	From string `query:"from" doc:"First UTC day, YYYY-MM-DD (inclusive). Default: to minus 6 days." example:"2026-11-14"`
	To   string `query:"to" doc:"Last UTC day, YYYY-MM-DD (inclusive). Default: today (UTC)." example:"2026-11-20"`
}

// Range parses the query against today's date.
func (q RangeQuery) Range() (analytics.Range, error) {
	return analytics.ParseRange(q.From, q.To, time.Now())
}

type mcpRangeInput struct {
	ID string `path:"id" maxLength:"64" doc:"The MCP's id."`
	RangeQuery
}

type toolInput struct {
	ID          string `path:"id" maxLength:"64" doc:"The MCP's id."`
	Name        string `path:"name" maxLength:"256" doc:"The tool name, percent-encoded (a/b is a%2Fb)."`
	Granularity string `query:"granularity" enum:"day,hour" doc:"Series buckets: day (default) or hour (ranges of at most 14 days)."`
	Compare     string `query:"compare" enum:"previous" doc:"previous adds previous: the same figures over as many days just before from."`
	RangeQuery
}

type overviewInput struct {
	ID          string `path:"id" maxLength:"64" doc:"The MCP's id."`
	Granularity string `query:"granularity" enum:"day,hour" doc:"Series buckets: day (default) or hour (ranges of at most 14 days)."`
	Compare     string `query:"compare" enum:"previous" doc:"previous adds previous: the same figures over as many days just before from."`
	RangeQuery
}

type toolsInput struct {
	ID      string `path:"id" maxLength:"64" doc:"The MCP's id."`
	Compare string `query:"compare" enum:"previous" doc:"previous adds previous (from, to) and, on every item, its figures over as many days just before from."`
	RangeQuery
}

type breakdownInput struct {
	ID         string `path:"id" maxLength:"64" doc:"The MCP's id."`
	By         string `query:"by" maxLength:"266" doc:"Required: tool, method, client_name, client_version, server_version, protocol_version, error_type, error_kind, user_id or attribute:<key>." example:"client_name"`
	Tool       string `query:"tool" maxLength:"256" doc:"Only the tools/call items of this tool."`
	Method     string `query:"method" maxLength:"64" doc:"Only the items of this method."`
	ClientName string `query:"client_name" maxLength:"128" doc:"Only the items of this client."`
	Status     string `query:"status" enum:"ok,error" doc:"Only ok or only error items."`
	Limit      int    `query:"limit" minimum:"1" maximum:"200" default:"20" doc:"Values listed; the rest are summed in other."`
	Compare    string `query:"compare" enum:"previous" doc:"previous adds previous (from, to) and, on every item, its figures over as many days just before from."`
	RangeQuery
}

type sessionsInput struct {
	ID     string `path:"id" maxLength:"64" doc:"The MCP's id."`
	Limit  int    `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Sessions per page."`
	Cursor string `query:"cursor" maxLength:"512" doc:"next_cursor of the previous page."`
	RangeQuery
}

type timelineInput struct {
	ID        string `path:"id" maxLength:"64" doc:"The MCP's id."`
	SessionID string `path:"session_id" maxLength:"128" doc:"The session id, percent-encoded (a/b is a%2Fb)."`
	Limit     int    `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Items per page."`
	Cursor    string `query:"cursor" maxLength:"512" doc:"next_cursor of the previous page."`
	From      string `query:"from" doc:"Optional first UTC day, YYYY-MM-DD (inclusive): only the session's items from that day on." example:"2026-11-20"`
	To        string `query:"to" doc:"Optional last UTC day, YYYY-MM-DD (inclusive): only the session's items up to that day." example:"2026-11-20"`
}

type bodyOf[T any] struct{ Body *T }

const rangeDoc = `

Takes ` + "`from`" + ` and ` + "`to`" + ` (inclusive YYYY-MM-DD, whole UTC days; defaults: the last 7 days
through today). A malformed date is 400 ` + "`invalid_date`" + `; ` + "`from`" + ` after ` + "`to`" + ` is 422
` + "`invalid_range`" + `; more than 1096 days is 422 ` + "`range_too_large`" + `. An item at 23:59:59.999Z belongs
to its day, one at 00:00:00Z to the next. Day series have one entry per day, zero-filled,
oldest first. Latencies are milliseconds over the items that carry ` + "`duration_ms`" + ` and are null
when none does. Percentiles come from ClickHouse's t-digest (` + "`quantilesTDigest`" + `), kept in
daily rollups and merged over the range: typically within 1% of the exact value (worst
cases a few percent on small or very skewed samples). Distinct counts (sessions, users) use
` + "`uniqHLL12`" + ` (HyperLogLog, 4096 cells): exact up to 16 distinct values, and about 1.6% typical
relative error beyond (a count just past 16 may be off by one or two).`

const granularityDoc = `

Every series entry carries ` + "`date`" + ` (its UTC day) and ` + "`start`" + ` (RFC 3339, the bucket's first instant).
` + "`granularity=hour`" + ` makes the series hourly — one entry per hour of the range, oldest first,
zero-filled — for ranges of at most 14 days (longer: 422 ` + "`range_too_large`" + `); the headline figures are
unchanged. The default is ` + "`day`" + `. Example entry: ` + "`" + `{"date": "2026-11-20", "start": "2026-11-20T13:00:00Z",
"calls": 42, "errors": 1, "p95_ms": 180.5}` + "`" + `.`

const compareDoc = `

` + "`compare=previous`" + ` adds ` + "`previous`" + `: the headline figures over as many days just before ` + "`from`" + `, with
their own ` + "`from`" + ` and ` + "`to`" + `. Example, for 2026-11-14..2026-11-20: ` + "`" + `"previous": {"from": "2026-11-07",
"to": "2026-11-13", "calls": 1200, "errors": 12, "error_rate": 0.01, "avg_ms": 95.2, "p50_ms": 80, "p95_ms": 210,
"p99_ms": 480}` + "`" + ` (the overview's also has ` + "`sessions`" + ` and ` + "`users`" + `).`

const compareListDoc = `

` + "`compare=previous`" + ` adds ` + "`previous`" + ` (` + "`{from, to}`" + `, as many days just before ` + "`from`" + `) and, on every item,
` + "`previous`" + ` with its figures then, matched by name (zeros for a tool without a call then). Example item:
` + "`" + `{"name": "search_docs", "calls": 120, ..., "previous": {"calls": 100, "errors": 2, "error_rate": 0.02,
"avg_ms": 90, "p50_ms": 70, "p95_ms": 200, "sessions": 14}}` + "`" + `.`

// metricRead documents a metric read: every one takes the range rules.
func metricRead(id, summary, desc string) huma.Operation {
	return huma.Operation{OperationID: id, Summary: summary,
		Description: desc + rangeDoc, Tags: []string{"Metrics"}, Errors: []int{400, 404, 422, 503}}
}

var getOverviewOp = metricRead("get-overview", "Overview of an MCP",
	"The headline figures of an MCP over the range: calls (items of any method), errors, sessions, users (user ids, falling back to the session id), latencies, a daily series, and the nightly figures (`active_users_28d`, `stickiness`, `retention_7d`) with `nightly_as_of`, the last UTC day the nightly pass covered (null, with null figures, before the first pass). "+
		"Why agents fail (docs/failures.md): `error_kinds`, `unknown_tool_calls` and `repeated_calls`; the last two are counted from raw events "+
		"and are null when the range holds more than 5,000,000 events of the MCP."+granularityDoc+compareDoc)

func (s *Server) getOverview(ctx context.Context, in *overviewInput) (*bodyOf[analytics.Overview], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	o, err := s.reads().Overview(ctx, analytics.MetricQuery{MCPID: in.ID, Range: r, Granularity: in.Granularity, Compare: in.Compare})
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.Overview]{o}, nil
}

var listToolsOp = metricRead("list-tools", "Tools of an MCP",
	"Every tool called in the range (`tools/call` items only), by calls descending."+compareListDoc)

func (s *Server) listTools(ctx context.Context, in *toolsInput) (*bodyOf[analytics.ToolList], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	o, err := s.reads().Tools(ctx, analytics.MetricQuery{MCPID: in.ID, Range: r, Compare: in.Compare})
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.ToolList]{o}, nil
}

var getToolOp = metricRead("get-tool", "One tool of an MCP",
	"One tool's figures, daily series, error types (with the last message) and clients. A tool with no data in the range answers zeros, not 404. `repeated_calls` is null when the range holds more than 5,000,000 events of the MCP (it is counted from raw events)."+granularityDoc+compareDoc)

func (s *Server) getTool(ctx context.Context, in *toolInput) (*bodyOf[analytics.ToolDetail], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	o, err := s.reads().Tool(ctx, analytics.MetricQuery{MCPID: in.ID, Range: r, Granularity: in.Granularity, Compare: in.Compare}, in.Name)
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.ToolDetail]{o}, nil
}

var getBreakdownOp = metricRead("get-breakdown", "Breakdown of an MCP by one dimension", analytics.BreakdownDoc)

func (s *Server) getBreakdown(ctx context.Context, in *breakdownInput) (*bodyOf[analytics.Breakdown], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	q, err := analytics.ParseBreakdownQuery(in.By, in.Tool, in.Method, in.ClientName, in.Status, in.Limit)
	if err != nil {
		return nil, err
	}
	b, err := s.reads().Breakdown(ctx, analytics.MetricQuery{MCPID: in.ID, Range: r, Compare: in.Compare}, q)
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.Breakdown]{b}, nil
}

var getInsightsOp = metricRead("get-insights", "Insights for an MCP", analytics.InsightsDoc)

func (s *Server) getInsights(ctx context.Context, in *mcpRangeInput) (*bodyOf[analytics.Insights], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	o, err := s.opts.Analytics.Insights(ctx, in.ID, r)
	return &bodyOf[analytics.Insights]{o}, err
}

var listSessionsOp = metricRead("list-sessions", "Sessions of an MCP", analytics.SessionsDoc)

func (s *Server) listSessions(ctx context.Context, in *sessionsInput) (*bodyOf[analytics.SessionPage], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	o, err := s.opts.Analytics.Sessions(ctx, in.ID, r, in.Limit, in.Cursor)
	return &bodyOf[analytics.SessionPage]{o}, err
}

var getSessionTimelineOp = huma.Operation{OperationID: "get-session-timeline", Summary: "One session's timeline",
	Description: analytics.TimelineDoc, Tags: []string{"Metrics"}, Errors: []int{400, 404, 422, 503}}

func (s *Server) getSessionTimeline(ctx context.Context, in *timelineInput) (*bodyOf[analytics.SessionTimeline], error) {
	w, err := analytics.ParseTimeWindow(in.From, in.To)
	if err != nil {
		return nil, err
	}
	p := principal(ctx)
	if _, err := s.opts.MCPs.FindMCP(ctx, p.AccountID, in.ID); err != nil {
		return nil, err
	}
	// Items before the first day the account keeps are not read, like
	// every other read's (a session wholly before it is 404).
	if kept := s.keptFrom(p); kept.After(w.From) {
		w.From = kept
	}
	o, err := s.opts.Analytics.SessionTimeline(ctx, in.ID, in.SessionID, w, in.Limit, in.Cursor)
	return &bodyOf[analytics.SessionTimeline]{o}, err
}

var getUsageOp = metricRead("get-usage", "Usage of the account",
	"Events accepted for the account over the range, per day and per MCP (an MCP deleted since keeps its events, with a null name), and the ingest limits that apply.")

func (s *Server) getUsage(ctx context.Context, in *RangeQuery) (*bodyOf[analytics.Usage], error) {
	r, err := in.Range()
	if err != nil {
		return nil, err
	}
	p := principal(ctx)
	r.KeptFrom = s.keptFrom(p)
	list, err := s.opts.MCPs.ListMCPs(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	names := make([]analytics.MCPName, len(list))
	for i, m := range list {
		names[i] = analytics.MCPName{ID: m.ID, Name: m.Name}
	}
	u, err := s.opts.Analytics.Usage(ctx, p.AccountID, r, names)
	if err != nil {
		return nil, err
	}
	u.Limits = s.opts.Limits
	return &bodyOf[analytics.Usage]{u}, nil
}

// reads answers the metric reads that fan out (series, previous period).
func (s *Server) reads() analytics.MetricReads {
	return analytics.MetricReads{Reader: s.opts.Analytics, Failures: s.failureReader(), Inventory: s.opts.Inventory, Releases: s.releaseReader()}
}

// mcpRange checks that the MCP is the caller's (another account's is 404,
// as if it did not exist) and parses the range.
func (s *Server) mcpRange(ctx context.Context, mcpID string, q RangeQuery) (analytics.Range, error) {
	r, err := q.Range()
	if err != nil {
		return r, err
	}
	p := principal(ctx)
	r.KeptFrom = s.keptFrom(p)
	_, err = s.opts.MCPs.FindMCP(ctx, p.AccountID, mcpID)
	return r, err
}

// keptFrom is the oldest day the caller's account keeps (zero: forever):
// reads clamp to it, so days beyond retention answer zeros even before the
// nightly job deleted them.
func (s *Server) keptFrom(p *accounts.Principal) time.Time {
	return analytics.KeptFrom(accounts.EffectiveRetention(p.RetentionDays, s.opts.RetentionDays), time.Now())
}
