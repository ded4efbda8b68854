// Package httpapi is the HTTP transport: huma operations on gin, whose route
// definitions both validate requests and generate the OpenAPI reference at
// /docs. Handlers are thin: decode (huma does it), call a domain service,
// encode. Every failure is a problem+json document with a stable code.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humagin"
	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
)

// Options are the server's dependencies and settings. Services left nil
// leave their routes out (tests build servers with only what they need).
type Options struct {
	Logger      *slog.Logger
	BaseURL     string   // public base address, used in /docs and as the SDK default
	LegacyHosts []string // hosts that still answer, with Deprecation headers
	// Checks are the dependencies /health reports on, by name.
	Checks map[string]func(context.Context) error
	Auth   accounts.Authenticator
	// Account services; each one's routes are registered when it is set.
	Sessions accounts.AuthService    // /v1/auth/signup, /login, /logout
	Accounts accounts.AccountService // /v1/account, /profile, /company
	Members  accounts.MemberService  // /v1/account/members
	MCPs     accounts.MCPService     // /v1/mcps; also the ownership check of metric reads
	Keys     accounts.KeyService     // /v1/mcps/{id}/keys, /v1/keys/{keyId}
	Tokens   accounts.TokenService   // /v1/account/tokens
	// Deletions serves DELETE /v1/mcps/{id}/users/{user_id} and
	// GET /v1/account/deletions/{id}.
	Deletions accounts.DeletionService
	// Inventory, when set, serves POST /v1/ingest/inventory (with
	// Ingester) and GET /v1/mcps/{id}/inventory (with Analytics).
	Inventory analytics.InventoryService
	// ToolChanges and ChangeImpact, when set (with MCPs), serve
	// GET /v1/mcps/{id}/inventory/changes/{change_id}.
	ToolChanges  analytics.ToolChangeStore
	ChangeImpact analytics.ToolChangeImpactReader
	// AffectedClients, when set, fills the affected clients of the
	// inventory read's changes.
	AffectedClients analytics.AffectedClientsReader
	// Ingester, when set, serves POST /v1/ingest.
	Ingester Ingester
	// SpanSources, when set, keeps which OTLP emitters sent MCP spans, so
	// that POST /v1/otlp/v1/metrics skips their metric points (spans win);
	// unset, every point is read.
	SpanSources SpanSources
	// Analytics, when set with MCPs, serves the metric reads.
	Analytics analytics.Reader
	// Exporter, when set with MCPs, serves GET /v1/mcps/{id}/export,
	// limited per account by ExportLimits.
	Exporter     analytics.Exporter
	ExportLimits ExportLimits
	// RetentionDays is the installation's storage.retention_days (0:
	// forever): reads answer zeros before it, accounts may keep less.
	RetentionDays int
	// Limits are the ingest limits /v1/account/usage reports.
	Limits analytics.UsageLimits
	// App, when set, is the dashboard served under /app/; GET / sends
	// browsers there.
	App http.Handler
	// Metrics, when set, registers request metrics on it.
	Metrics *Metrics
	// TrustedProxies are the addresses or CIDRs whose X-Forwarded-For
	// header names the client; from anyone else it is ignored. Default
	// none: the client is the connection's peer.
	TrustedProxies []string
	// Deadlines bound handlers per class of route.
	Deadlines Deadlines
	// DecodeBudgetBytes bounds the bytes of ingest and OTLP bodies being
	// decoded at once (default DefaultDecodeBudgetBytes).
	DecodeBudgetBytes int64
	// ClientLimit, when set, limits signup, login and invitation
	// acceptance per client address (IPv6 per /64), besides the per-email
	// login limit of the Sessions service.
	ClientLimit *accounts.AttemptLimiter
	// StoreReady, when set, reports whether the metrics store is migrated
	// and reachable; metric reads answer 503 unavailable while it is false.
	StoreReady func() bool

	// Alerting services. Each one set serves its routes:
	// Channels /v1/account/channels[/{channel}/webhook], Rules
	// /v1/mcps/{id}/rules and /v1/rules/{ruleId}, Evaluator
	// POST /v1/rules/{ruleId}/evaluate, Inbox /v1/account/inbox[/read],
	// Notifications /v1/account/notifications.
	Channels alerting.ChannelService
	// Connections serves /v1/account/channels/{channel}/connection.
	Connections   alerting.ConnectionService
	Rules         alerting.RuleService
	Evaluator     alerting.Evaluator
	Inbox         alerting.InboxService
	Notifications alerting.NotificationService
	// ChannelTests serves POST /v1/account/channels/{channel}/test,
	// limited per person and per account by ChannelTestLimits.
	ChannelTests      alerting.TestService
	ChannelTestLimits ChannelTestLimits
	// Verification, when set, serves POST /v1/auth/verify and POST
	// /v1/account/profile/verification, and mails the verification of
	// new and changed addresses.
	Verification Verifier
	// Probes serves /v1/mcps/{id}/probes and /v1/probes/{probeId}[/results];
	// Badges (with Probes) the badge routes and /mcp's list_probes.
	Probes alerting.ProbeService
	Badges alerting.ProbeBadgeService
	// SLOs, with SLI, serves /v1/mcps/{id}/slos and /v1/slos/{sloId}.
	SLOs alerting.SLOService
	SLI  analytics.SLIReader

	// Version is the service's version, announced by /mcp (default "dev").
	Version string
	// MCPServerHook, when set, is handed the /mcp server before it serves
	// (cmd/telemetryd instruments it with mcpgo). /mcp is served when MCPs
	// and Analytics are set.
	MCPServerHook func(*mcp.Server)
}

// Server is the HTTP API.
type Server struct {
	opts    Options
	log     *slog.Logger
	engine  *gin.Engine
	api     huma.API
	metrics *Metrics
	// decoding is the budget of bytes being decoded at once.
	decoding *semaphore.Weighted
	exports  *exportLimiter
	// testLimits budgets the channel tests.
	testLimits channelTestLimiter
}

// New builds the server and registers every route.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BaseURL == "" {
		opts.BaseURL = "http://127.0.0.1:8080"
	}
	useProblemErrors()
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.DecodeBudgetBytes <= 0 {
		opts.DecodeBudgetBytes = DefaultDecodeBudgetBytes
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: opts.Metrics, decoding: semaphore.NewWeighted(opts.DecodeBudgetBytes),
		exports: newExportLimiter(opts.ExportLimits)}

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.UseRawPath = true // a tool named a/b is addressed as a%2Fb
	e.UnescapePathValues = true
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(opts.TrustedProxies); err != nil {
		// Validated with the configuration; a bad entry here trusts no one.
		opts.Logger.Error("server.trusted_proxies", "error", err)
		_ = e.SetTrustedProxies(nil)
	}
	e.Use(s.requestContext, recoverPanics)
	e.NoRoute(noRoute)
	e.NoMethod(noMethod)
	s.engine = e

	cfg := huma.DefaultConfig("MCP Telemetry API", "1")
	cfg.CreateHooks = nil // no $schema links in bodies: the wire is exactly the contract
	cfg.DocsPath = ""
	cfg.OpenAPIPath = "/openapi"
	cfg.Info.Description = apiDescription
	cfg.Info.License = &huma.License{Name: "MIT", Identifier: "MIT"}
	cfg.Servers = []*huma.Server{{URL: opts.BaseURL}}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		schemeSession: {Type: "http", Scheme: "bearer", Description: "A session token (`sess_…`) from signup or login."},
		schemeIngest:  {Type: "http", Scheme: "bearer", Description: "An ingest key (`ik_…`) from POST /v1/mcps/{id}/keys."},
		schemeToken: {Type: "http", Scheme: "bearer", Description: "A personal access token (`pat_…`) from POST /v1/account/tokens: " +
			"the reads a session of its person may make, nothing else."},
	}
	s.api = humagin.New(e, cfg)

	if opts.App != nil {
		app := gin.WrapH(opts.App)
		e.GET("/app/*path", app)
		e.HEAD("/app/*path", app)
		e.GET("/app", app)
		e.GET("/", func(c *gin.Context) {
			if wantsHTML(c.GetHeader("Accept")) {
				c.Redirect(http.StatusFound, "/app/")
				return
			}
			noRoute(c)
		})
	}
	s.registerDocs()
	s.registerRoutes()
	if opts.MCPs != nil && opts.Analytics != nil {
		s.mountMCP()
	}
	return s
}

// Handler returns the server as an http.Handler.
func (s *Server) Handler() http.Handler { return s.engine }

// API returns the huma API, whose OpenAPI document lists every operation.
func (s *Server) API() huma.API { return s.api }

// Engine returns the gin engine, for mounting non-API routes (the dashboard).
func (s *Server) Engine() *gin.Engine { return s.engine }
