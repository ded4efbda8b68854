package main

import (
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting/notify/email"
	"github.com/mcpscope/telemetry/analytics"
)

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var p problems
	c.validateServer(&p)
	c.validateStores(&p)
	c.validateAuth(&p)
	c.validateIngest(&p)
	c.validateAlerting(&p)
	c.validateJobs(&p)
	c.validateProbes(&p)
	return errors.Join(p...)
}

// problems gathers the invalid settings, each named by its key.
type problems []error

func (p *problems) bad(key, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

// validateServer checks the HTTP server and the logs.
func (c Config) validateServer(p *problems) {
	if c.Server.Addr == "" {
		p.bad("server.addr", "must be set")
	}
	if u, err := url.Parse(c.Server.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.bad("server.base_url", "must be an absolute http(s) URL, got %q", c.Server.BaseURL)
	}
	for key, d := range map[string]time.Duration{"server.read_header_timeout": c.Server.ReadHeaderTimeout,
		"server.idle_timeout": c.Server.IdleTimeout, "server.deadline_ingest": c.Server.DeadlineIngest,
		"server.deadline_reads": c.Server.DeadlineReads, "server.deadline_other": c.Server.DeadlineOther,
		"server.deadline_export": c.Server.DeadlineExport} {
		if d < time.Second {
			p.bad(key, "must be at least 1s")
		}
	}
	if longest := max(c.Server.DeadlineIngest, c.Server.DeadlineReads, c.Server.DeadlineOther); c.Server.WriteTimeout <= longest {
		p.bad("server.write_timeout", "must be longer than every deadline (%s), or answers would be cut off", longest)
	}
	if c.Server.ShutdownTimeout <= 0 {
		p.bad("server.shutdown_timeout", "must be positive")
	}
	if a := c.Server.PprofAddr; a != "" && !loopbackAddr(a) {
		p.bad("server.pprof_addr", "must be a loopback address (127.0.0.1:PORT or [::1]:PORT), got %q", a)
	}
	if c.Server.MemoryLimitMiB < 0 || (c.Server.MemoryLimitMiB > 0 && c.Server.MemoryLimitMiB < 64) {
		p.bad("server.memory_limit_mib", "must be 0 (no limit) or at least 64")
	}
	if c.Log.Level != "debug" && c.Log.Level != "info" && c.Log.Level != "warn" && c.Log.Level != "error" {
		p.bad("log.level", "must be debug, info, warn or error")
	}
	if c.Log.Format != "json" && c.Log.Format != "text" {
		p.bad("log.format", "must be json or text")
	}
	for _, proxy := range c.Server.TrustedProxies {
		if _, err := netip.ParsePrefix(proxy); err != nil {
			if _, err := netip.ParseAddr(proxy); err != nil {
				p.bad("server.trusted_proxies", "%q is neither an IP address nor a CIDR", proxy)
			}
		}
	}
}

// validateStores checks the stores: ClickHouse, PostgreSQL, the lifecycle and exports.
func (c Config) validateStores(p *problems) {
	if c.Storage.RetentionDays < 0 {
		p.bad("storage.retention_days", "must be 0 (keep forever) or a number of days")
	}
	if c.Storage.DeletionPoll < 100*time.Millisecond {
		p.bad("storage.deletion_poll", "must be at least 100ms")
	}
	if c.Storage.DeletionsPerHour < 1 {
		p.bad("storage.deletions_per_hour", "must be at least 1")
	}
	if c.Export.PerMinute < 1 || c.Export.Concurrent < 1 || c.Export.MaxConcurrentTotal < 1 {
		p.bad("export", "per_minute, concurrent and max_concurrent_total must be at least 1")
	}
	if c.ClickHouse.ReadTimeout < 0 || (c.ClickHouse.ReadTimeout > 0 && c.ClickHouse.ReadTimeout < time.Second) {
		p.bad("clickhouse.read_timeout", "must be 0 (none) or at least 1s")
	}
	if c.Postgres.StatementTimeout < 0 {
		p.bad("postgres.statement_timeout", "must be 0 (none) or positive")
	}
	if len(c.ClickHouse.Addr) == 0 {
		p.bad("clickhouse.addr", "must name at least one host:port")
	}
	if c.ClickHouse.Database == "" {
		p.bad("clickhouse.database", "must be set")
	}
	var cerr *telemetry.Error
	if errors.As(c.ClickHouse.storeConfig().ValidateCluster(), &cerr) {
		p.bad(cerr.Field, "%s", cerr.Message)
	}
	if c.ClickHouse.MaxOpenConns < 1 {
		p.bad("clickhouse.max_open_conns", "must be at least 1")
	}
	if !strings.HasPrefix(c.Postgres.URL, "postgres://") && !strings.HasPrefix(c.Postgres.URL, "postgresql://") {
		p.bad("postgres.url", "must be a postgres:// URL")
	}
	if c.Postgres.MaxConns < 4 {
		p.bad("postgres.max_conns", "must be at least 4: the rule evaluator holds one for its lock while it writes on others")
	}
}

// validateAuth checks sign-in, sessions and the ingest key cache.
func (c Config) validateAuth(p *problems) {
	if c.Auth.SessionTTL < time.Minute {
		p.bad("auth.session_ttl", "must be at least 1m")
	}
	if c.Auth.LoginMaxFailures < 1 {
		p.bad("auth.login_max_failures", "must be at least 1")
	}
	if c.Auth.ClientMaxAttempts < 1 {
		p.bad("auth.client_max_attempts", "must be at least 1")
	}
	if c.Auth.ClientAttemptWindow < time.Second {
		p.bad("auth.client_attempt_window", "must be at least 1s")
	}
	if c.Auth.KeyCacheTTL <= 0 || c.Auth.KeyCacheTTL > accounts.MaxKeyCacheTTL {
		p.bad("auth.key_cache_ttl", "must be between 1ns and 5s: a deleted key must stop working within 5 s")
	}
}

// validateIngest checks the ingest pipeline and its write-ahead log.
func (c Config) validateIngest(p *problems) {
	if c.Ingest.RateLimitPerMinute < 1 {
		p.bad("ingest.rate_limit_per_minute", "must be at least 1")
	}
	if c.Ingest.WALDir == "" {
		p.bad("ingest.wal_dir", "must be set")
	}
	if c.Ingest.WALMaxBytes < 16<<20 {
		p.bad("ingest.wal_max_bytes", "must be at least 16 MiB")
	}
	if c.Ingest.WALSegmentBytes < 1<<20 || c.Ingest.WALSegmentBytes > c.Ingest.WALMaxBytes {
		p.bad("ingest.wal_segment_bytes", "must be at least 1 MiB and at most wal_max_bytes")
	}
	if c.Ingest.FlushInterval <= 0 || c.Ingest.FlushInterval > 4*time.Second {
		p.bad("ingest.flush_interval", "must be positive and at most 4s: items must be readable within 5 s")
	}
	if c.Ingest.FlushMaxRows < 1 {
		p.bad("ingest.flush_max_rows", "must be at least 1")
	}
	if c.Ingest.NodeID == "" {
		p.bad("ingest.node_id", "must be set (defaults to the host name)")
	}
	if c.Ingest.RedactionBudget < time.Millisecond {
		p.bad("ingest.redaction_budget", "must be at least 1ms")
	}
	if c.Ingest.DecodeBudgetBytes < analytics.MaxBodyBytes {
		p.bad("ingest.decode_budget_bytes", "must be at least %d (one whole body)", analytics.MaxBodyBytes)
	}
	if c.Ingest.RefusedPerMinute < 0 {
		p.bad("ingest.refused_per_minute", "must be 0 (no limit) or more")
	}
	if c.Ingest.DedupExactIDs != 0 && c.Ingest.DedupExactIDs < 65536 {
		p.bad("ingest.dedup_exact_ids", "must be 0 (every id exactly) or at least 65536")
	}
	if c.Ingest.DedupFilterMiB < 1 {
		p.bad("ingest.dedup_filter_mib", "must be at least 1")
	}
	if c.Ingest.CacheMaxIDs < 1024 {
		p.bad("ingest.cache_max_ids", "must be at least 1024")
	}
	if c.Ingest.PendingTTL < time.Second || c.Ingest.PendingTTL > time.Hour {
		p.bad("ingest.pending_ttl", "must be between 1s and 1h")
	}
	if c.Ingest.DedupWindow < 24*time.Hour {
		p.bad("ingest.dedup_window", "must be at least 24h (the contract's duplicate window)")
	}
}

// validateAlerting checks the rule evaluator and the deliveries.
func (c Config) validateAlerting(p *problems) {
	if c.Alerting.MaxRulesPerAccount < 1 {
		p.bad("alerting.max_rules_per_account", "must be at least 1")
	}
	if c.Alerting.PassBudget < time.Second || c.Alerting.PassBudget >= max(c.Alerting.EvaluateInterval, time.Minute) {
		p.bad("alerting.pass_budget", "must be at least 1s and shorter than a pass may run (the larger of evaluate_interval and 1m)")
	}
	if c.Alerting.EvaluateInterval < time.Second {
		p.bad("alerting.evaluate_interval", "must be at least 1s")
	}
	if c.Alerting.SecretKey == "" && c.Alerting.SecretKeyFile == "" {
		p.bad("alerting.secret_key", "set secret_key or secret_key_file")
	}
	if c.Alerting.Email.MaxPerAccountHour < 0 {
		p.bad("alerting.email.max_per_account_hour", "must be 0 (no bound) or more, got %d", c.Alerting.Email.MaxPerAccountHour)
	}
	if c.Alerting.Email.SMTPURL != "" {
		if _, err := email.ParseURL(c.Alerting.Email.SMTPURL); err != nil {
			p.bad("alerting.email.smtp_url", "%v", err)
		}
		if a, err := mail.ParseAddress(c.Alerting.Email.From); err != nil || strings.ContainsAny(c.Alerting.Email.From, "\r\n") || a.Address == "" {
			p.bad("alerting.email.from", "must be an email address (e.g. alerts@example.com or \"Alerts <alerts@example.com>\") when smtp_url is set")
		}
	}
	if err := c.Alerting.Outbound.notify().Validate(); err != nil {
		*p = append(*p, err)
	}
	if d := c.Alerting.Delivery; d.Timeout < time.Second || d.RetryBase < 10*time.Millisecond || d.PollInterval < 10*time.Millisecond || d.Concurrency < 1 {
		p.bad("alerting.delivery", "timeout must be at least 1s, retry_base and poll_interval at least 10ms, concurrency at least 1")
	}
}

// validateJobs checks the nightly pass and self-telemetry.
func (c Config) validateJobs(p *problems) {
	if _, err := cron.ParseStandard(c.Nightly.Schedule); err != nil {
		p.bad("nightly.schedule", "is not a cron expression: %v", err)
	}
	if k := c.SelfTelemetry.IngestKey; k != "" && !strings.HasPrefix(k, accounts.IngestKeyPrefix) {
		p.bad("self_telemetry.ingest_key", "must be an ingest key (%s…)", accounts.IngestKeyPrefix)
	}
	if c.Nightly.CatchUpDays < 0 || c.Nightly.CatchUpDays > 366 {
		p.bad("nightly.catch_up_days", "must be between 0 and 366")
	}
}
