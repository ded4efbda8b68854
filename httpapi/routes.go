package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// routes is the API: every operation, with its method, path, the
// credential it takes and the handler method that serves it. Each handler
// sits beside its documentation (the ...Op variable: summary, description,
// error statuses) in the file of its noun. A group's routes are served only
// when the server has the service behind them (tests build servers with
// only what they need). /docs and the isolation test derive from this
// table through huma's registry. Outside the table, on gin: /docs itself,
// the dashboard under /app/, and /metrics (wired by cmd/telemetryd).
func (s *Server) routes() []routeGroup {
	o := s.opts
	return []routeGroup{
		{on: true, routes: []route{
			{http.MethodGet, "/health", Public, handle(s.health, healthOp)},
		}},
		{on: o.Sessions != nil, routes: []route{
			{http.MethodPost, "/v1/auth/signup", Public, handle(s.signup, signupOp).limitedPerClient()},
			{http.MethodPost, "/v1/auth/login", Public, handle(s.login, loginOp).limitedPerClient()},
			{http.MethodPost, "/v1/auth/logout", AnyMember, handle(s.logout, logoutOp)},
		}},
		{on: o.Verification != nil, routes: []route{
			{http.MethodPost, "/v1/auth/verify", Public, handle(s.verifyEmail, verifyEmailOp).limitedPerClient()},
			{http.MethodPost, "/v1/account/profile/verification", AnyMember, handle(s.resendVerification, resendVerificationOp)},
		}},
		{on: o.Accounts != nil, routes: []route{
			{http.MethodGet, "/v1/account", AnyMember, handle(s.getAccount, getAccountOp)},
			{http.MethodPatch, "/v1/account", Manager, handle(s.updateAccount, updateAccountOp)},
			{http.MethodGet, "/v1/account/profile", AnyMember, handle(s.getProfile, getProfileOp)},
			{http.MethodPatch, "/v1/account/profile", AnyMember, handle(s.updateProfile, updateProfileOp)},
			{http.MethodGet, "/v1/account/company", AnyMember, handle(s.getCompany, getCompanyOp)},
			{http.MethodPut, "/v1/account/company", Manager, handle(s.replaceCompany, replaceCompanyOp)},
			{http.MethodPatch, "/v1/account/company", Manager, handle(s.updateCompany, updateCompanyOp)},
		}},
		{on: o.Members != nil, routes: []route{
			{http.MethodGet, "/v1/account/members", AnyMember, handle(s.listMembers, listMembersOp)},
			{http.MethodPost, "/v1/account/members", Manager, handle(s.addMember, addMemberOp).before(addMemberResponses)},
			{http.MethodPatch, "/v1/account/members/{user_id}", Manager, handle(s.updateMember, updateMemberOp)},
			{http.MethodDelete, "/v1/account/members/{user_id}", Manager, handle(s.removeMember, removeMemberOp)},
		}},
		{on: o.Tokens != nil, routes: []route{
			{http.MethodGet, "/v1/account/tokens", SessionOnly, handle(s.listTokens, listTokensOp)},
			{http.MethodPost, "/v1/account/tokens", SessionOnly, handle(s.createToken, createTokenOp)},
			{http.MethodDelete, "/v1/account/tokens/{tokenId}", SessionOnly, handle(s.deleteToken, deleteTokenOp)},
		}},
		{on: o.MCPs != nil, routes: []route{
			{http.MethodGet, "/v1/mcps", AnyMember, handle(s.listMCPs, listMCPsOp)},
			{http.MethodPost, "/v1/mcps", Manager, handle(s.createMCP, createMCPOp)},
			{http.MethodGet, "/v1/mcps/{id}", AnyMember, handle(s.getMCP, getMCPOp)},
			{http.MethodPatch, "/v1/mcps/{id}", Manager, handle(s.updateMCP, updateMCPOp)},
			{http.MethodDelete, "/v1/mcps/{id}", Manager, handle(s.deleteMCP, deleteMCPOp)},
		}},
		{on: o.Keys != nil, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/keys", AnyMember, handle(s.listKeys, listKeysOp)},
			{http.MethodPost, "/v1/mcps/{id}/keys", Manager, handle(s.createKey, createKeyOp)},
			{http.MethodDelete, "/v1/keys/{keyId}", Manager, handle(s.deleteKey, deleteKeyOp)},
		}},
		{on: o.Analytics != nil && o.MCPs != nil, class: classRead, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/overview", AnyMember, handle(s.getOverview, getOverviewOp)},
			{http.MethodGet, "/v1/mcps/{id}/tools", AnyMember, handle(s.listTools, listToolsOp)},
			{http.MethodGet, "/v1/mcps/{id}/tools/{name}", AnyMember, handle(s.getTool, getToolOp)},
			{http.MethodGet, "/v1/mcps/{id}/breakdown", AnyMember, handle(s.getBreakdown, getBreakdownOp)},
			{http.MethodGet, "/v1/mcps/{id}/insights", AnyMember, handle(s.getInsights, getInsightsOp)},
			{http.MethodGet, "/v1/mcps/{id}/sessions", AnyMember, handle(s.listSessions, listSessionsOp)},
			{http.MethodGet, "/v1/mcps/{id}/sessions/{session_id}", AnyMember, handle(s.getSessionTimeline, getSessionTimelineOp)},
			{http.MethodGet, "/v1/account/usage", AnyMember, handle(s.getUsage, getUsageOp)},
		}},
		{on: s.failureReader() != nil && o.MCPs != nil, class: classRead, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/unknown-tools", AnyMember, handle(s.getUnknownTools, getUnknownToolsOp)},
		}},
		{on: s.releaseReader() != nil && o.MCPs != nil, class: classRead, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/releases", AnyMember, handle(s.listReleases, listReleasesOp)},
			{http.MethodGet, "/v1/mcps/{id}/releases/compare", AnyMember, handle(s.compareReleases, compareReleasesOp)},
			{http.MethodGet, "/v1/mcps/{id}/releases/{server_version}/verdict", AnyMember, handle(s.getReleaseVerdict, releaseVerdictOp)},
		}},
		{on: o.Inventory != nil && o.Analytics != nil && o.MCPs != nil, class: classRead, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/inventory", AnyMember, handle(s.getInventory, getInventoryOp)},
		}},
		{on: o.ToolChanges != nil && o.ChangeImpact != nil && o.MCPs != nil, class: classRead, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/inventory/changes/{change_id}", AnyMember, handle(s.getToolChange, getToolChangeOp)},
		}},
		{on: o.Inventory != nil && o.Ingester != nil, class: classIngest, routes: []route{
			{http.MethodPost, "/v1/ingest/inventory", IngestOnly, handle(s.ingestInventory, ingestInventoryOp).rawBody(inventoryBody)},
		}},
		{on: o.Exporter != nil && o.MCPs != nil, class: classExport, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/export", AnyMember, handle(s.exportItems, exportOp).before(exportResponses)},
		}},
		{on: o.Deletions != nil, routes: []route{
			{http.MethodDelete, "/v1/mcps/{id}/users/{user_id}", Manager, handle(s.deleteUserData, deleteUserDataOp)},
			{http.MethodGet, "/v1/account/deletions/{id}", AnyMember, handle(s.getDeletion, getDeletionOp)},
		}},
		{on: o.Ingester != nil, class: classIngest, routes: []route{
			{http.MethodPost, "/v1/ingest", IngestOnly, handle(s.ingest, ingestOp).rawBody(ingestBody)},
			{http.MethodPost, "/v1/otlp/v1/traces", IngestOnly, handle(s.otlpTraces, otlpTracesOp).before(otlpResponses).rawBody(otlpTracesBody)},
			{http.MethodPost, "/v1/otlp/v1/metrics", IngestOnly, handle(s.otlpMetrics, otlpMetricsOp).before(otlpSignalResponses("ExportMetricsServiceResponse")).rawBody(otlpSignalBody("ExportMetricsServiceRequest"))},
			{http.MethodPost, "/v1/otlp/v1/logs", IngestOnly, handle(s.otlpLogs, otlpLogsOp).before(otlpSignalResponses("ExportLogsServiceResponse")).rawBody(otlpSignalBody("ExportLogsServiceRequest"))},
		}},
		{on: o.Channels != nil, describe: s.describeChannels, routes: []route{
			{http.MethodGet, "/v1/account/channels", AnyMember, handle(s.listChannels, listChannelsOp)},
			{http.MethodPut, "/v1/account/channels", AnyMember, handle(s.updatePreferences, updatePreferencesOp).before(preferencesRequestBody)},
			{http.MethodPut, "/v1/account/channels/{channel}/webhook", Manager, handle(s.connectWebhook, connectWebhookOp)},
			{http.MethodDelete, "/v1/account/channels/{channel}/webhook", Manager, handle(s.disconnectWebhook, disconnectWebhookOp)},
		}},
		{on: o.Channels != nil && o.Connections != nil, describe: s.describeConnections, routes: []route{
			{http.MethodPut, "/v1/account/channels/{channel}/connection", Manager, handle(s.connectChannel, connectChannelOp).before(connectionRequestBody)},
			{http.MethodDelete, "/v1/account/channels/{channel}/connection", Manager, handle(s.disconnectWebhook, disconnectChannelOp)},
			{http.MethodPost, "/v1/account/channels/{channel}/connection/rotate", Manager, handle(s.rotateSecret, rotateSecretOp)},
		}},
		{on: o.Rules != nil, describe: s.describeRules, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/rules", AnyMember, handle(s.listRules, listRulesOp)},
			{http.MethodPost, "/v1/mcps/{id}/rules", Manager, handle(s.createRule, createRuleOp)},
			{http.MethodGet, "/v1/rules/{ruleId}", AnyMember, handle(s.getRule, getRuleOp)},
			{http.MethodPatch, "/v1/rules/{ruleId}", Manager, handle(s.updateRule, updateRuleOp)},
			{http.MethodDelete, "/v1/rules/{ruleId}", Manager, handle(s.deleteRule, deleteRuleOp)},
			{http.MethodGet, "/v1/rules/{ruleId}/events", AnyMember, handle(s.listRuleEvents, ruleEventsOp)},
		}},
		{on: o.Evaluator != nil, describe: s.describeEvaluate, routes: []route{
			{http.MethodPost, "/v1/rules/{ruleId}/evaluate", Manager, handle(s.evaluateRule, evaluateRuleOp)},
		}},
		{on: o.Inbox != nil, describe: s.describeInbox, routes: []route{
			{http.MethodGet, "/v1/account/inbox", AnyMember, handle(s.listInbox, listInboxOp)},
			{http.MethodPost, "/v1/account/inbox/read", AnyMember, handle(s.markInboxRead, markInboxReadOp)},
		}},
		{on: o.Notifications != nil, describe: s.describeNotifications, routes: []route{
			{http.MethodGet, "/v1/account/notifications", Manager, handle(s.listNotifications, listNotificationsOp)},
			{http.MethodPost, "/v1/account/notifications/{id}/retry", Manager, handle(s.retryNotification, retryNotificationOp)},
		}},
		{on: o.Probes != nil, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/probes", AnyMember, handle(s.listProbes, listProbesOp)},
			{http.MethodPost, "/v1/mcps/{id}/probes", Manager, handle(s.createProbe, createProbeOp)},
			{http.MethodGet, "/v1/mcps/{id}/probes/down-periods", AnyMember, handle(s.listDownPeriods, downPeriodsOp)},
			{http.MethodGet, "/v1/probes/{probeId}", AnyMember, handle(s.getProbe, getProbeOp)},
			{http.MethodPatch, "/v1/probes/{probeId}", Manager, handle(s.updateProbe, updateProbeOp)},
			{http.MethodDelete, "/v1/probes/{probeId}", Manager, handle(s.deleteProbe, deleteProbeOp)},
			{http.MethodGet, "/v1/probes/{probeId}/results", AnyMember, handle(s.listProbeResults, probeResultsOp)},
		}},
		{on: o.Probes != nil && o.Badges != nil, routes: []route{
			{http.MethodPost, "/v1/probes/{probeId}/badge", Manager, handle(s.createBadge, createBadgeOp)},
			{http.MethodDelete, "/v1/probes/{probeId}/badge", Manager, handle(s.deleteBadge, deleteBadgeOp)},
			{http.MethodGet, "/badges/{file}", Public, handle(s.getBadge, getBadgeOp)},
		}},
		{on: o.SLOs != nil && o.SLI != nil, describe: s.describeSLOs, class: classRead, routes: []route{
			{http.MethodGet, "/v1/mcps/{id}/slos", AnyMember, handle(s.listSLOs, listSLOsOp)},
			{http.MethodPost, "/v1/mcps/{id}/slos", Manager, handle(s.createSLO, createSLOOp)},
			{http.MethodGet, "/v1/slos/{sloId}", AnyMember, handle(s.getSLO, getSLOOp)},
			{http.MethodGet, "/v1/slos/{sloId}/events", AnyMember, handle(s.listSLOEvents, sloEventsOp)},
			{http.MethodPatch, "/v1/slos/{sloId}", Manager, handle(s.updateSLO, updateSLOOp)},
			{http.MethodDelete, "/v1/slos/{sloId}", Manager, handle(s.deleteSLO, deleteSLOOp)},
		}},
		{on: o.ChannelTests != nil, routes: []route{
			{http.MethodPost, "/v1/account/channels/{channel}/test", AnyMember, handle(s.testChannel, testChannelOp)},
		}},
	}
}

// route is one operation of the table.
type route struct {
	method, path string
	access       Access
	handler      handler
}

// routeGroup is the routes one service serves.
type routeGroup struct {
	on    bool       // the server has the service
	class routeClass // its handler deadline (Options.Deadlines)
	// describe, when set, documents the schemas the routes share.
	describe func()
	routes   []route
}

// handler binds a handler method to its documentation. The steps that
// need the server's schema registry run at registration: before (the
// operation's documentation refers to registered schemas) and rawBody (the
// body is read raw by the handler, so it is documented only after huma
// registered the operation: set before, huma would validate the possibly
// gzipped bytes as JSON).
type handler struct {
	op       huma.Operation
	register func(s *Server, op huma.Operation, access Access)
	prepare  func(s *Server, op *huma.Operation)
	body     func(s *Server) map[string]*huma.MediaType
	// perClient routes count against Options.ClientLimit.
	perClient bool
}

// handle pairs a handler method with its documentation.
func handle[I, O any](h func(context.Context, *I) (*O, error), op huma.Operation) handler {
	return handler{op: op, register: func(s *Server, op huma.Operation, access Access) { register(s, op, access, h) }}
}

func (h handler) before(f func(s *Server, op *huma.Operation)) handler {
	h.prepare = f
	return h
}

func (h handler) limitedPerClient() handler {
	h.perClient = true
	return h
}

func (h handler) rawBody(f func(s *Server) map[string]*huma.MediaType) handler {
	h.body = f
	return h
}

// routeClass picks a route's handler deadline.
type routeClass int

const (
	classOther routeClass = iota
	classIngest
	classRead
	classExport
)

// Deadlines bound how long a handler may run, per class of route: past
// it the handler's context ends, so its database calls stop and it
// answers 503 unavailable. Zero fields take the defaults.
type Deadlines struct {
	Ingest time.Duration // POST /v1/ingest, OTLP; default 30 s
	Reads  time.Duration // metric reads; default 60 s
	Other  time.Duration // accounts, alerting, everything else; default 15 s
	// Export bounds an export (GET /v1/mcps/{id}/export); default 1 h.
	// The server's write timeout does not: an export moves the
	// connection's write deadline with every chunk it sends.
	Export time.Duration
}

// DefaultDeadlines are the defaults of Deadlines.
var DefaultDeadlines = Deadlines{Ingest: 30 * time.Second, Reads: time.Minute, Other: 15 * time.Second, Export: time.Hour}

func (d Deadlines) of(c routeClass) time.Duration {
	var v, def time.Duration
	switch c {
	case classIngest:
		v, def = d.Ingest, DefaultDeadlines.Ingest
	case classRead:
		v, def = d.Reads, DefaultDeadlines.Reads
	case classExport:
		v, def = d.Export, DefaultDeadlines.Export
	default:
		v, def = d.Other, DefaultDeadlines.Other
	}
	if v <= 0 {
		return def
	}
	return v
}

// withDeadline bounds the handler's context.
func withDeadline(d time.Duration) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		ctx, cancel := context.WithTimeout(hctx.Context(), d)
		defer cancel()
		next(huma.WithContext(hctx, ctx))
	}
}

// registerRoutes registers every route of the enabled groups.
func (s *Server) registerRoutes() {
	for _, g := range s.routes() {
		if !g.on {
			continue
		}
		if g.describe != nil {
			g.describe()
		}
		for _, r := range g.routes {
			op := r.handler.op
			op.Method, op.Path = r.method, r.path
			op.Middlewares = huma.Middlewares{withDeadline(s.opts.Deadlines.of(g.class))}
			if g.class == classRead || g.class == classExport {
				op.Middlewares = append(op.Middlewares, s.whenStoreReady)
				op.Errors = appendStatus(op.Errors, http.StatusServiceUnavailable)
			}
			if r.handler.prepare != nil {
				r.handler.prepare(s, &op)
			}
			if r.handler.perClient && s.opts.ClientLimit != nil {
				op.Middlewares = append(op.Middlewares, s.limitClient)
				op.Errors = appendStatus(op.Errors, http.StatusTooManyRequests)
			}
			r.handler.register(s, op, r.access)
			if r.handler.body != nil {
				s.api.OpenAPI().Paths[r.path].Post.RequestBody = &huma.RequestBody{Required: true, Content: r.handler.body(s)}
			}
		}
	}
}
