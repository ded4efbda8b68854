package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/httpapi"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/internal/jobmetrics"
	"github.com/mcpscope/telemetry/internal/jobs"
	"github.com/mcpscope/telemetry/mcpgo"
	"github.com/mcpscope/telemetry/postgres"
	"github.com/mcpscope/telemetry/probe"
	"github.com/mcpscope/telemetry/wal"
	"github.com/mcpscope/telemetry/web"
)

// Main is the whole service: its connections, its HTTP server and its
// background jobs. Tests build one with NewMain and drive it like the binary.
type Main struct {
	Config Config
	Log    *slog.Logger
	// NodeIDWait bounds how long Open waits for this instance's node id
	// while another connection holds it (a predecessor whose host died
	// holds it until PostgreSQL notices); default 45 s.
	NodeIDWait time.Duration

	PG       *postgres.DB
	CH       *clickhouse.DB
	Registry *prometheus.Registry
	API      *httpapi.Server
	WAL      *wal.Log
	Ingest   *ingest.Pipeline

	// Account services (PostgreSQL). Keys runs the revocation listener and
	// last_used_at writer in Run.
	Auth     *postgres.AuthService
	Keys     *postgres.KeyService
	Tokens   *postgres.TokenService
	Accounts *postgres.AccountService
	Members  *postgres.MemberService
	MCPs     *postgres.MCPService
	// Deletions is the queue of telemetry deletions; the worker runs in Run.
	Deletions *postgres.DeletionService

	// Alerting services (PostgreSQL; rule values from ClickHouse). The
	// evaluator runs every alerting.evaluate_interval in Run.
	Channels      *postgres.ChannelService
	Rules         *postgres.RuleService
	Evaluator     *alerting.RuleEvaluator
	SLOs          *postgres.SLOService
	SLOEval       *alerting.SLOEvaluator
	Inbox         *postgres.InboxService
	Notifications *postgres.NotificationService
	evalMetrics   *jobmetrics.Evaluator
	jobMetrics    *jobmetrics.Jobs
	// Outbox sends email and team-chat deliveries (when configured) in
	// Run; Tester sends test messages.
	Outbox *notify.Outbox
	Tester *alerting.ChannelTester
	// Verification mails the verification links of addresses (with an
	// SMTP server).
	Verification *alerting.VerificationMailer
	// Inventory keeps the tool inventory; the evaluator counts its
	// changes for tool_changes rules.
	Inventory *postgres.InventoryService
	// Probes serves the probe routes; Prober runs the checks in Run
	// (docs/probes.md).
	ProbeStore *postgres.ProbeStore
	Probes     *probe.Service
	Prober     *probe.Runner
	// SelfTelemetry sends /mcp's own telemetry (self_telemetry); nil when
	// not configured.
	SelfTelemetry *mcpgo.Telemetry

	// storeReady is set once ClickHouse is migrated: at Open, or by Run
	// when the service started during a ClickHouse outage.
	storeReady atomic.Bool

	listener net.Listener
	// metricsListener serves /metrics when metrics.addr is set.
	metricsListener net.Listener
	// pprofListener serves the Go profiler when server.pprof_addr is set.
	pprofListener net.Listener
	closers       []func()
}

// instrumentMCP sends the telemetry of /mcp through mcpgo when
// self_telemetry.ingest_key is set. A failure only logs: the endpoint
// serves either way.
func (m *Main) instrumentMCP(srv *mcp.Server) {
	st := m.Config.SelfTelemetry
	if st.IngestKey == "" {
		return
	}
	endpoint := st.Endpoint
	if endpoint == "" {
		endpoint = m.Config.Server.BaseURL
	}
	t, err := mcpgo.Instrument(srv, mcpgo.Options{Client: client.Options{Key: st.IngestKey, Endpoint: endpoint, Logger: m.Log}})
	if err != nil {
		m.Log.Error("self_telemetry: /mcp is not instrumented", "error", err)
		return
	}
	m.SelfTelemetry = t
	m.closers = append(m.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = t.Close(ctx)
	})
}

// NewMain returns a service for cfg; nothing is opened yet.
func NewMain(cfg Config, log *slog.Logger) *Main {
	return &Main{Config: cfg, Log: log, NodeIDWait: 45 * time.Second}
}

// Connect opens the database pools (without migrating).
func (m *Main) Connect(ctx context.Context) error {
	pg, err := postgres.Open(ctx, postgres.Config{URL: m.Config.Postgres.URL, MaxConns: m.Config.Postgres.MaxConns,
		StatementTimeout: m.Config.Postgres.StatementTimeout}, m.Log)
	if err != nil {
		return err
	}
	m.PG = pg
	m.PG.DeletionsPerHour = m.Config.Storage.DeletionsPerHour
	m.closers = append(m.closers, pg.Close)
	chCfg := m.Config.ClickHouse.storeConfig()
	// A deletion keeps watching for rows other instances flush late: two
	// flush intervals and a second (instances are configured alike).
	chCfg.DeletionGrace = 2*m.Config.Ingest.FlushInterval + time.Second
	ch, err := clickhouse.Open(ctx, chCfg)
	if err != nil {
		return fmt.Errorf("clickhouse: %w", err)
	}
	m.CH = ch
	m.closers = append(m.closers, func() { _ = ch.Close() })
	return nil
}

// Migrate applies the migrations of both databases. Postgres holds an
// advisory lock meanwhile; ClickHouse statements are idempotent.
func (m *Main) Migrate(ctx context.Context) error {
	if err := m.PG.Migrate(ctx); err != nil {
		return fmt.Errorf("postgres migrations: %w", err)
	}
	if err := m.CH.Migrator.Migrate(ctx); err != nil {
		return fmt.Errorf("clickhouse migrations: %w", err)
	}
	return nil
}

// Open connects, migrates and builds every service and the HTTP API.
func (m *Main) Open(ctx context.Context) error {
	m.Log.Info("starting telemetryd", "config", m.Config.Redacted())
	if mib := m.Config.Server.MemoryLimitMiB; mib > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(mib) << 20)
	}
	if err := m.Connect(ctx); err != nil {
		return err
	}
	if err := m.migrateAtStart(ctx); err != nil {
		return err
	}
	m.Registry = prometheus.NewRegistry()
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	ic := m.Config.Ingest
	if err := m.openIngest(ctx); err != nil {
		return err
	}
	a := m.Config.Auth
	m.Keys = postgres.NewKeyService(m.PG, a.KeyCacheTTL)
	m.Auth = postgres.NewAuthService(m.PG, accounts.AuthPolicy(a), m.Keys)
	m.Tokens = postgres.NewTokenService(m.PG)
	m.Accounts = postgres.NewAccountService(m.PG)
	m.Members = postgres.NewMemberService(m.PG)
	m.MCPs = postgres.NewMCPService(m.PG, m.Keys)
	m.Deletions = postgres.NewDeletionService(m.PG)
	if err := m.openAlerting(); err != nil {
		return err
	}
	m.API = httpapi.New(httpapi.Options{
		MCPServerHook: m.instrumentMCP,
		Logger:        m.Log,
		BaseURL:       m.Config.Server.BaseURL,
		LegacyHosts:   m.Config.Server.LegacyHosts,
		Checks: map[string]func(context.Context) error{
			"postgres":   m.PG.Ping,
			"clickhouse": m.CH.Ping,
			"wal":        m.Ingest.LogHealth,
		},
		Metrics:           httpapi.NewMetrics(m.Registry),
		TrustedProxies:    m.Config.Server.TrustedProxies,
		DecodeBudgetBytes: ic.DecodeBudgetBytes,
		Deadlines: httpapi.Deadlines{Ingest: m.Config.Server.DeadlineIngest, Reads: m.Config.Server.DeadlineReads,
			Other: m.Config.Server.DeadlineOther, Export: m.Config.Server.DeadlineExport},
		ClientLimit: accounts.AuthPolicy(a).ClientLimiter(),
		StoreReady:  m.storeReady.Load,
		Ingester:    m.Ingest,
		SpanSources: postgres.NewSpanSources(m.PG),
		Analytics:   m.CH.Reads,
		Exporter:    m.CH.Reads,
		ExportLimits: httpapi.ExportLimits{PerMinute: m.Config.Export.PerMinute, Concurrent: m.Config.Export.Concurrent,
			Total: m.Config.Export.MaxConcurrentTotal},
		Limits: analytics.UsageLimits{IngestPayloadsPerMinute: ic.RateLimitPerMinute,
			MaxBatchItems: analytics.MaxBatchItems, MaxBodyBytes: analytics.MaxBodyBytes},
		App:             web.Handler(),
		Auth:            m.Auth,
		Sessions:        m.Auth,
		Accounts:        m.Accounts,
		Members:         m.Members,
		MCPs:            m.MCPs,
		Keys:            m.Keys,
		Tokens:          m.Tokens,
		Deletions:       m.Deletions,
		Inventory:       m.Inventory,
		ToolChanges:     m.Inventory,
		ChangeImpact:    m.CH.Reads,
		AffectedClients: m.CH.Reads,
		RetentionDays:   m.Config.Storage.RetentionDays,

		Channels:      m.Channels,
		Connections:   m.Channels,
		Rules:         m.Rules,
		Evaluator:     m.Evaluator,
		Inbox:         m.Inbox,
		Notifications: m.Notifications,
		ChannelTests:  m.Tester,
		Verification:  m.Verification,
		Probes:        m.Probes,
		Badges:        m.Probes,
		SLOs:          m.SLOs,
		SLI:           m.CH.Reads,
	})
	if mc := m.Config.Metrics; mc.Enabled && mc.Addr == "" {
		m.API.Engine().GET("/metrics", gin.WrapH(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})))
	}
	return m.listen()
}

// listen opens the API's listener, and the separate /metrics one when
// metrics.addr is set.
func (m *Main) listen() error {
	ln, err := net.Listen("tcp", m.Config.Server.Addr)
	if err != nil {
		return err
	}
	m.listener = ln
	if mc := m.Config.Metrics; mc.Enabled && mc.Addr != "" {
		mln, err := net.Listen("tcp", mc.Addr)
		if err != nil {
			return fmt.Errorf("metrics.addr: %w", err)
		}
		m.metricsListener = mln
		m.closers = append(m.closers, func() { _ = mln.Close() })
	}
	return m.listenPprof()
}

// migrateAtStart applies the migrations of both databases. ClickHouse
// down is no reason not to start: ingest goes to the write-ahead log,
// reads answer 503, and Run migrates once it is back.
func (m *Main) migrateAtStart(ctx context.Context) error {
	if err := m.PG.Migrate(ctx); err != nil {
		return fmt.Errorf("postgres migrations: %w", err)
	}
	if err := m.CH.Migrator.Migrate(ctx); err != nil {
		if telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE {
			return fmt.Errorf("clickhouse migrations: %w", err)
		}
		m.Log.Warn("ClickHouse is unavailable: serving ingest into the write-ahead log; reads answer 503 until it is back",
			"error", err)
	} else {
		m.storeReady.Store(true)
	}
	return nil
}

// openIngest holds the node id, opens the write-ahead log and builds the
// ingest pipeline.
func (m *Main) openIngest(ctx context.Context) error {
	ic := m.Config.Ingest
	// The node id names this instance's log records in ClickHouse: it must
	// be unique among the running instances.
	release, err := m.PG.HoldNodeID(ctx, ic.NodeID, m.NodeIDWait)
	if err != nil {
		return err
	}
	m.closers = append(m.closers, release)
	wl, err := wal.Open(ic.WALDir, wal.Options{SegmentBytes: ic.WALSegmentBytes, MaxBytes: ic.WALMaxBytes, Logger: m.Log})
	if err != nil {
		return fmt.Errorf("write-ahead log: %w", err)
	}
	m.WAL = wl
	m.closers = append(m.closers, func() { _ = wl.Close() })
	iopts := ingest.Options{
		Node: ic.NodeID, RateLimitPerMinute: ic.RateLimitPerMinute, RefusedPerMinute: ic.RefusedPerMinute,
		DedupWindow: ic.DedupWindow, DedupExactIDs: ic.DedupExactIDs, DedupFilterBytes: ic.DedupFilterMiB << 20,
		FlushInterval: ic.FlushInterval, FlushMaxRows: ic.FlushMaxRows, Logger: m.Log,
		Metrics:         ingest.NewMetrics(m.Registry, wl.Stats),
		Sessions:        postgres.NewAutoSessions(m.PG),
		RedactionBudget: ic.RedactionBudget,
	}
	if ic.SharedDedup {
		iopts.Registry, iopts.CacheMaxIDs = postgres.NewIngestIDs(m.PG, ic.DedupWindow), ic.CacheMaxIDs
	}
	iopts.Failpoint = killAtFailpoint(os.Getenv("TELEMETRY_TEST_FAILPOINT"))
	m.Ingest = ingest.New(wl, m.CH.Sink, iopts)
	ingest.RegisterDedupMetrics(m.Registry, m.Ingest.DedupStats)
	return nil
}

// openAlerting builds the channels, the outbox, the rules and their
// evaluator, the inventory, the inbox and the notifications.
func (m *Main) openAlerting() error {
	key, err := secretKey(m.Config.Alerting)
	if err != nil {
		return err
	}
	box, err := alerting.NewSecretBox(key)
	if err != nil {
		return err
	}
	m.Channels = postgres.NewChannelService(m.PG, box)
	notifiers, sending, err := buildNotifiers(m.Config.Alerting)
	if err != nil {
		return err
	}
	m.Channels.Sending = sending
	m.Channels.ConnectEnv = m.Config.Alerting.Outbound.notify().ConnectEnv()
	outbox := postgres.NewOutboxStore(m.PG, box)
	dc := m.Config.Alerting.Delivery
	m.Outbox = &notify.Outbox{Store: outbox, Notifiers: notifiers, Log: m.Log, BaseURL: m.Config.Server.BaseURL,
		Timeout: dc.Timeout, RetryBase: dc.RetryBase, Concurrency: dc.Concurrency,
		EmailPerAccountHour: m.Config.Alerting.Email.MaxPerAccountHour}
	if len(notifiers) > 0 {
		om := jobmetrics.NewOutbox(m.Registry)
		om.EmailLimit(m.Config.Alerting.Email.MaxPerAccountHour)
		m.Outbox.Metrics = om
	}
	m.Tester = &alerting.ChannelTester{Store: outbox, Notifiers: notifiers, Timeout: dc.Timeout, BaseURL: m.Config.Server.BaseURL}
	m.Verification = &alerting.VerificationMailer{Store: postgres.NewVerificationService(m.PG), Notifier: notifiers[alerting.ChannelEmail],
		BaseURL: m.Config.Server.BaseURL, Timeout: dc.Timeout, Log: m.Log}
	m.closers = append(m.closers, m.Verification.Wait)
	m.Rules = postgres.NewRuleService(m.PG)
	m.Rules.MaxPerAccount = m.Config.Alerting.MaxRulesPerAccount
	m.Evaluator = alerting.NewRuleEvaluator(postgres.NewEvaluationStore(m.PG), m.CH.Reads, m.PG.TransitionConcurrency())
	m.Evaluator.Budget = m.Config.Alerting.PassBudget
	m.Inventory = postgres.NewInventoryService(m.PG)
	m.Evaluator.Changes = m.Inventory
	m.Evaluator.ChangeList, m.Evaluator.ChangeImpact = m.Inventory, m.CH.Reads
	if err := m.openProbes(box); err != nil {
		return err
	}
	m.Evaluator.Repeats = m.CH.Reads
	m.Evaluator.Unknown = analytics.UnknownToolRuleCounter{Listed: m.Inventory, Calls: m.CH.Reads}
	m.Evaluator.Releases = analytics.ReleaseComparer{Reader: m.CH.Reads}
	m.Inbox = postgres.NewInboxService(m.PG)
	m.Notifications = postgres.NewNotificationService(m.PG)
	m.SLOs = postgres.NewSLOService(m.PG)
	m.SLOEval = &alerting.SLOEvaluator{Store: m.SLOs, SLI: m.CH.Reads}
	if m.Registry != nil {
		m.evalMetrics = jobmetrics.NewEvaluator(m.Registry)
		m.jobMetrics = jobmetrics.NewJobs(m.Registry)
	}
	return nil
}

// Addr is the address the API listens on (useful with port 0 in tests).
func (m *Main) Addr() string { return m.listener.Addr().String() }

// MetricsAddr is the address of the separate /metrics listener, "" when
// metrics are served by the API or not at all.
func (m *Main) MetricsAddr() string {
	if m.metricsListener == nil {
		return ""
	}
	return m.metricsListener.Addr().String()
}

// Run serves until ctx is cancelled, then shuts down gracefully: in-flight
// requests finish, background jobs drain.
func (m *Main) Run(ctx context.Context) error {
	srv := &http.Server{
		Handler:           m.API.Handler(),
		ReadHeaderTimeout: m.Config.Server.ReadHeaderTimeout,
		ReadTimeout:       m.Config.Server.ReadTimeout,
		WriteTimeout:      m.Config.Server.WriteTimeout,
		IdleTimeout:       m.Config.Server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		m.Log.Info("serving the API", "addr", "http://"+m.Addr(), "docs", m.Config.Server.BaseURL+"/docs")
		if err := srv.Serve(m.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error { return m.Ingest.Run(gctx) })
	m.servePprof(gctx, g)
	if m.metricsListener != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			m.Log.Info("serving metrics", "addr", "http://"+m.MetricsAddr()+"/metrics")
			if err := ms.Serve(m.metricsListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error { <-gctx.Done(); return ms.Close() })
	}
	// The background jobs (internal/jobs; wired in jobs.go). Those that
	// read ClickHouse start once it is migrated.
	storeJobs := func() {
		for _, j := range m.storeJobs() {
			g.Go(func() error { return jobs.Run(gctx, j) })
		}
	}
	if m.storeReady.Load() {
		storeJobs()
	} else {
		g.Go(func() error {
			if m.migrateWhenUp(gctx) {
				storeJobs()
			}
			return nil
		})
	}
	for _, run := range m.probeJobs() {
		g.Go(func() error { return run(gctx) })
	}
	for _, j := range m.postgresJobs() {
		g.Go(func() error { return jobs.Run(gctx, j) })
	}
	// Deleted ingest keys are evicted from this instance's cache as soon as
	// PostgreSQL announces them; the loop reconnects on its own.
	g.Go(func() error { return m.Keys.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		m.Log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), m.Config.Server.ShutdownTimeout)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return g.Wait()
}

// migrateWhenUp retries the ClickHouse migrations until they succeed (then
// reads open) or ctx ends; it reports whether they succeeded.
func (m *Main) migrateWhenUp(ctx context.Context) bool {
	b := telemetry.Backoff{Base: time.Second, Max: 10 * time.Second}
	if telemetry.Sleep(ctx, b.Next()) != nil {
		return false
	}
	err := b.Retry(ctx, func() error { return m.CH.Migrator.Migrate(ctx) }, func(err error, wait time.Duration) {
		m.Log.Warn("ClickHouse migrations failed; retrying", "error", err, "backoff", wait)
	})
	if err != nil {
		return false
	}
	m.storeReady.Store(true)
	m.Log.Info("ClickHouse is back and migrated: reads are served again")
	return true
}

// Close releases everything Open acquired, in reverse order.
func (m *Main) Close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.closers = nil
}

// killAtFailpoint returns, for the crash tests, an ingest failpoint that
// kills this process with SIGKILL when the pipeline reaches the point
// named (TELEMETRY_TEST_FAILPOINT, with shared dedup: "after-append",
// between the log write and the claim of the payload's ids; "after-claim",
// between the claim and the answer), or nil when none is named.
func killAtFailpoint(name string) func(string) {
	if name == "" {
		return nil
	}
	return func(point string) {
		if point == name {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
