package main

import (
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/viper"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"github.com/mcpscope/telemetry/alerting/notify/email"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/httpapi"
	"github.com/mcpscope/telemetry/ingest"
)

// Config is the whole configuration: defaults below, then the YAML file
// (configs/telemetryd.yaml), then TELEMETRY_<SECTION>_<KEY> environment
// variables. It is loaded once here and passed down explicitly.
type Config struct {
	Server     ServerConfig     `mapstructure:"server"`
	Log        LogConfig        `mapstructure:"log"`
	ClickHouse ClickHouseConfig `mapstructure:"clickhouse"`
	Postgres   PostgresConfig   `mapstructure:"postgres"`
	Auth       AuthConfig       `mapstructure:"auth"`
	Ingest     IngestConfig     `mapstructure:"ingest"`
	Alerting   AlertingConfig   `mapstructure:"alerting"`
	Nightly    NightlyConfig    `mapstructure:"nightly"`
	Metrics    MetricsConfig    `mapstructure:"metrics"`
	Export     ExportConfig     `mapstructure:"export"`
	Storage    StorageConfig    `mapstructure:"storage"`
	Probes     ProbesConfig     `mapstructure:"probes"`
	// SelfTelemetry instruments the service's own MCP endpoint (/mcp).
	SelfTelemetry SelfTelemetryConfig `mapstructure:"self_telemetry"`
}

// SelfTelemetryConfig sends the telemetry of the service's own MCP
// endpoint to an MCP of a telemetry service, through the Go middleware
// (mcpgo): empty IngestKey, the default, sends nothing
// (docs/mcp-endpoint.md).
type SelfTelemetryConfig struct {
	// IngestKey is an ingest key (ik_…) of the MCP that shows /mcp.
	IngestKey string `mapstructure:"ingest_key"`
	// Endpoint is the telemetry service's base address; empty means
	// server.base_url (this service).
	Endpoint string `mapstructure:"endpoint"`
}

// StorageConfig is the data lifecycle: how long telemetry is kept and how
// often deletion requests are looked for.
type StorageConfig struct {
	// RetentionDays keeps telemetry this many UTC days (today included);
	// 0 keeps it forever. Accounts may keep less (retention_days on
	// /v1/account).
	RetentionDays int `mapstructure:"retention_days"`
	// DeletionPoll is how often the deletion worker looks for requests.
	DeletionPoll time.Duration `mapstructure:"deletion_poll"`
	// DeletionsPerHour is how many deletion requests (a person's data,
	// deleting an MCP) an account may make per hour; past it 429.
	DeletionsPerHour int `mapstructure:"deletions_per_hour"`
}

// ExportConfig limits GET /v1/mcps/{id}/export per account and in total
// (per instance). An export holds up to two ClickHouse connections of its
// own beside the pool of clickhouse.max_open_conns (docs/limits.md).
type ExportConfig struct {
	PerMinute          int `mapstructure:"per_minute"`
	Concurrent         int `mapstructure:"concurrent"`
	MaxConcurrentTotal int `mapstructure:"max_concurrent_total"`
}

// ServerConfig is the HTTP server.
type ServerConfig struct {
	Addr            string        `mapstructure:"addr"`
	BaseURL         string        `mapstructure:"base_url"`
	LegacyHosts     []string      `mapstructure:"legacy_hosts"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	ReadTimeout     time.Duration `mapstructure:"read_timeout"`
	// ReadHeaderTimeout, WriteTimeout and IdleTimeout are the HTTP
	// server's; the deadlines bound handlers per class of route.
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	WriteTimeout      time.Duration `mapstructure:"write_timeout"`
	IdleTimeout       time.Duration `mapstructure:"idle_timeout"`
	DeadlineIngest    time.Duration `mapstructure:"deadline_ingest"`
	DeadlineReads     time.Duration `mapstructure:"deadline_reads"`
	DeadlineOther     time.Duration `mapstructure:"deadline_other"`
	// DeadlineExport bounds one export; write_timeout does not apply to
	// it (each chunk sent moves the write deadline).
	DeadlineExport time.Duration `mapstructure:"deadline_export"`
	// MemoryLimitMiB is the Go runtime's soft memory limit: the garbage
	// collector works harder as the heap nears it. 0 leaves the runtime's
	// default (or GOMEMLIMIT).
	MemoryLimitMiB int `mapstructure:"memory_limit_mib"`
	// TrustedProxies are the addresses or CIDRs of reverse proxies whose
	// X-Forwarded-For names the client (per-client limits, logs).
	TrustedProxies []string `mapstructure:"trusted_proxies"`
	// PprofAddr, when set, serves the Go profiler (net/http/pprof) on
	// this loopback address; empty, the default, serves nothing.
	PprofAddr string `mapstructure:"pprof_addr"`
}

// LogConfig is the log output.
type LogConfig struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// ClickHouseConfig names the ClickHouse server (or cluster).
type ClickHouseConfig struct {
	Addr         []string      `mapstructure:"addr"`
	Database     string        `mapstructure:"database"`
	Username     string        `mapstructure:"username"`
	Password     string        `mapstructure:"password"`
	DialTimeout  time.Duration `mapstructure:"dial_timeout"`
	MaxOpenConns int           `mapstructure:"max_open_conns"`
	Cluster      string        `mapstructure:"cluster"`
	// Replicated: the cluster's shards have replicas (Replicated*MergeTree
	// tables under ZooKeeperPath, ON CLUSTER DDL).
	Replicated    bool   `mapstructure:"replicated"`
	ZooKeeperPath string `mapstructure:"zookeeper_path"`
	// ReadTimeout is the server-side bound of every read
	// (max_execution_time, whole seconds).
	ReadTimeout time.Duration `mapstructure:"read_timeout"`
}

// PostgresConfig names the PostgreSQL database.
type PostgresConfig struct {
	URL      string `mapstructure:"url"`
	MaxConns int32  `mapstructure:"max_conns"`
	// StatementTimeout bounds every statement (statement_timeout).
	StatementTimeout time.Duration `mapstructure:"statement_timeout"`
}

// AuthConfig is sessions and login protection: accounts.AuthPolicy with
// configuration tags (the two convert into each other).
type AuthConfig struct {
	SessionTTL         time.Duration `mapstructure:"session_ttl"`
	LoginMaxFailures   int           `mapstructure:"login_max_failures"`
	LoginFailureWindow time.Duration `mapstructure:"login_failure_window"`
	KeyCacheTTL        time.Duration `mapstructure:"key_cache_ttl"`
	// Sign-in attempts (signup, login, invitation acceptance) per client
	// address per window.
	ClientMaxAttempts   int           `mapstructure:"client_max_attempts"`
	ClientAttemptWindow time.Duration `mapstructure:"client_attempt_window"`
}

// IngestConfig is the ingest path: limits, write-ahead log and flusher.
type IngestConfig struct {
	RateLimitPerMinute int `mapstructure:"rate_limit_per_minute"`
	// RefusedPerMinute: payloads refused whole (malformed, too large, too
	// many items) a key may send per minute before it gets 429 unread.
	RefusedPerMinute int           `mapstructure:"refused_per_minute"`
	WALDir           string        `mapstructure:"wal_dir"`
	WALMaxBytes      int64         `mapstructure:"wal_max_bytes"`
	WALSegmentBytes  int64         `mapstructure:"wal_segment_bytes"`
	FlushInterval    time.Duration `mapstructure:"flush_interval"`
	FlushMaxRows     int           `mapstructure:"flush_max_rows"`
	NodeID           string        `mapstructure:"node_id"`
	DedupWindow      time.Duration `mapstructure:"dedup_window"`
	// DedupExactIDs and DedupFilterMiB bound the in-memory duplicate
	// filter (without SharedDedup): the most recent ids exactly, older
	// ones in a fixed-size filter, ClickHouse asked when it says maybe
	// (docs/exactly-once.md). DedupExactIDs 0: every id exactly.
	DedupExactIDs  int `mapstructure:"dedup_exact_ids"`
	DedupFilterMiB int `mapstructure:"dedup_filter_mib"`
	// SharedDedup keeps the accepted item ids in PostgreSQL, shared by
	// every instance (exactly once across instances, bounded memory);
	// CacheMaxIDs then bounds each instance's in-memory cache of them.
	SharedDedup bool `mapstructure:"shared_dedup"`
	CacheMaxIDs int  `mapstructure:"cache_max_ids"`
	// PendingTTL has no effect: shared dedup claims a payload's ids once
	// it is in the log, with nothing pending (docs/exactly-once.md). The
	// key is still accepted so that existing configurations load.
	PendingTTL time.Duration `mapstructure:"pending_ttl"`
	// DecodeBudgetBytes bounds the ingest and OTLP bytes being decoded at
	// once across requests; past it, bodies wait up to 1 s, then 503.
	DecodeBudgetBytes int64 `mapstructure:"decode_budget_bytes"`
	// RedactionBudget is the CPU time redaction may spend per MiB of a
	// payload (at least 2 ms a payload); past it the payload is refused,
	// 422 redaction_budget_exceeded (docs/limits.md).
	RedactionBudget time.Duration `mapstructure:"redaction_budget"`
}

// AlertingConfig is the rule evaluator and webhook secrets.
type AlertingConfig struct {
	EvaluateInterval time.Duration `mapstructure:"evaluate_interval"`
	SecretKey        string        `mapstructure:"secret_key"`
	SecretKeyFile    string        `mapstructure:"secret_key_file"`
	// MaxRulesPerAccount caps an account's rules (422 limit_reached).
	MaxRulesPerAccount int `mapstructure:"max_rules_per_account"`
	// PassBudget bounds the time one evaluation pass spends; accounts it
	// did not reach go first in the next pass.
	PassBudget time.Duration `mapstructure:"pass_budget"`
	// Sending email and team-chat deliveries (docs/delivery.md). With
	// nothing configured they stay queued, as the seed has it.
	Email    EmailConfig    `mapstructure:"email"`
	Chat     ChatConfig     `mapstructure:"chat"`
	Outbound OutboundConfig `mapstructure:"outbound"`
	Delivery DeliveryConfig `mapstructure:"delivery"`
}

// EmailConfig is the SMTP server alerts are emailed through.
type EmailConfig struct {
	// SMTPURL: smtp://[user:password@]host:port (STARTTLS required;
	// ?starttls=none on a loopback host only) or smtps://… (implicit
	// TLS). Empty: email is not sent.
	SMTPURL string `mapstructure:"smtp_url"`
	// From is the sender address (required with smtp_url).
	From string `mapstructure:"from"`
	// MaxPerAccountHour bounds the emails one account's deliveries send
	// in an hour; beyond it they wait, queued (0: no bound).
	MaxPerAccountHour int `mapstructure:"max_per_account_hour"`
}

// ChatConfig switches sending of Slack and Discord deliveries.
type ChatConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// OutboundConfig is how the service reaches webhooks (and SMTP's TLS).
type OutboundConfig struct {
	// ProxyURL: an HTTP CONNECT proxy for every webhook request
	// (HTTPS_PROXY is not read).
	ProxyURL string `mapstructure:"proxy_url"`
	// CAFile: extra PEM roots for outbound TLS, added to the system's.
	CAFile string `mapstructure:"ca_file"`
}

// DeliveryConfig tunes the outbox worker.
type DeliveryConfig struct {
	// Timeout bounds one send.
	Timeout time.Duration `mapstructure:"timeout"`
	// RetryBase is the first backoff after a failed attempt; each
	// further failure doubles it (up to 4 h), with jitter.
	RetryBase time.Duration `mapstructure:"retry_base"`
	// PollInterval is how often the outbox looks for due deliveries.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Concurrency bounds the sends in flight per instance.
	Concurrency int `mapstructure:"concurrency"`
}

// NightlyConfig is the nightly pass.
type NightlyConfig struct {
	Enabled     bool   `mapstructure:"enabled"`
	Schedule    string `mapstructure:"schedule"`
	CatchUpDays int    `mapstructure:"catch_up_days"`
}

// MetricsConfig is the service's own Prometheus endpoint.
type MetricsConfig struct {
	Enabled bool   `mapstructure:"enabled"`
	Addr    string `mapstructure:"addr"`
}

// DefaultConfig is what runs with no file and no environment: the servers
// `make run` starts, on loopback.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Server: ServerConfig{Addr: "127.0.0.1:8080", BaseURL: "http://127.0.0.1:8080", LegacyHosts: []string{}, TrustedProxies: []string{},
			ShutdownTimeout: 20 * time.Second, ReadTimeout: 30 * time.Second, MemoryLimitMiB: 448,
			ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 90 * time.Second, IdleTimeout: 2 * time.Minute,
			DeadlineIngest: httpapi.DefaultDeadlines.Ingest, DeadlineReads: httpapi.DefaultDeadlines.Reads, DeadlineOther: httpapi.DefaultDeadlines.Other,
			DeadlineExport: httpapi.DefaultDeadlines.Export},
		Log: LogConfig{Level: "info", Format: "json"},
		ClickHouse: ClickHouseConfig{Addr: []string{"127.0.0.1:19000"}, Database: "telemetry", Username: "default", DialTimeout: 5 * time.Second, MaxOpenConns: 16, ReadTimeout: 30 * time.Second,
			ZooKeeperPath: clickhouse.DefaultZooKeeperPath},
		Postgres: PostgresConfig{URL: "postgres://telemetry@127.0.0.1:15432/telemetry?sslmode=disable", MaxConns: 32, StatementTimeout: 30 * time.Second},
		Auth:     AuthConfig(accounts.DefaultAuthPolicy()),
		Ingest: IngestConfig{RateLimitPerMinute: 600, RefusedPerMinute: 60, WALDir: ".data/wal", WALMaxBytes: 2 << 30, WALSegmentBytes: 64 << 20,
			FlushInterval: time.Second, FlushMaxRows: 50_000, NodeID: host, DedupWindow: 24 * time.Hour,
			DedupExactIDs: 1 << 20, DedupFilterMiB: 64,
			CacheMaxIDs: 4 << 20, PendingTTL: 10 * time.Second,
			DecodeBudgetBytes: httpapi.DefaultDecodeBudgetBytes, RedactionBudget: ingest.DefaultRedactionBudget},
		Alerting: AlertingConfig{EvaluateInterval: time.Minute, SecretKeyFile: ".data/secret.key",
			MaxRulesPerAccount: alerting.MaxRulesPerAccount, PassBudget: 40 * time.Second,
			Email:    EmailConfig{MaxPerAccountHour: alerting.DefaultEmailPerAccountHour},
			Delivery: DeliveryConfig{Timeout: 10 * time.Second, RetryBase: alerting.DefaultRetryBase, PollInterval: time.Second, Concurrency: 32}},
		Nightly: NightlyConfig{Enabled: true, Schedule: "15 0 * * *", CatchUpDays: 30},
		Metrics: MetricsConfig{Enabled: true},
		Storage: StorageConfig{RetentionDays: analytics.MaxRangeDays, DeletionPoll: 5 * time.Second,
			DeletionsPerHour: accounts.DefaultDeletionsPerHour},
		Probes: defaultProbes(),
		Export: ExportConfig{PerMinute: httpapi.DefaultExportLimits.PerMinute, Concurrent: httpapi.DefaultExportLimits.Concurrent,
			MaxConcurrentTotal: httpapi.DefaultExportLimits.Total},
	}
}

// LoadConfig reads the file (if path is empty, configs/telemetryd.yaml when
// it exists) and the environment over the defaults, then validates.
func LoadConfig(path string) (Config, error) {
	v := viper.New()
	setDefaults(v, "", reflect.ValueOf(DefaultConfig()))
	v.SetEnvPrefix("TELEMETRY")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if path == "" {
		if _, err := os.Stat("configs/telemetryd.yaml"); err == nil {
			path = "configs/telemetryd.yaml"
		}
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, err)
		}
	}
	var c Config
	if err := v.Unmarshal(&c); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if c.Ingest.NodeID == "" {
		c.Ingest.NodeID, _ = os.Hostname()
	}
	return c, c.Validate()
}

// setDefaults registers every key with viper, so that environment variables
// override keys the file does not mention (viper ignores them otherwise).
func setDefaults(v *viper.Viper, prefix string, val reflect.Value) {
	walkConfig(prefix, val, func(key string, f reflect.Value) { v.SetDefault(key, f.Interface()) })
}

// walkConfig calls fn for every key of a configuration struct: one per leaf
// field, named by its mapstructure tags joined with dots (nested structs,
// but durations, are sections). docs/configuration.md lists the same keys.
func walkConfig(prefix string, val reflect.Value, fn func(key string, f reflect.Value)) {
	t := val.Type()
	for i := 0; i < t.NumField(); i++ {
		key := t.Field(i).Tag.Get("mapstructure")
		if prefix != "" {
			key = prefix + "." + key
		}
		f := val.Field(i)
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Duration(0)) {
			walkConfig(key, f, fn)
			continue
		}
		fn(key, f)
	}
}

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

// Redacted returns a copy safe to log.
func (c Config) Redacted() Config {
	r := c
	if r.ClickHouse.Password != "" {
		r.ClickHouse.Password = "redacted"
	}
	if r.Alerting.SecretKey != "" {
		r.Alerting.SecretKey = "redacted"
	}
	r.Alerting.Email.SMTPURL = redactURL(r.Alerting.Email.SMTPURL)
	r.Alerting.Outbound.ProxyURL = redactURL(r.Alerting.Outbound.ProxyURL)
	r.Postgres.URL = redactURL(r.Postgres.URL)
	if r.SelfTelemetry.IngestKey != "" {
		r.SelfTelemetry.IngestKey = "redacted"
	}
	return r
}

// storeConfig is the ClickHouse store's configuration.
func (c ClickHouseConfig) storeConfig() clickhouse.Config {
	return clickhouse.Config{Addr: c.Addr, Database: c.Database, Username: c.Username,
		Password: c.Password, DialTimeout: c.DialTimeout, MaxOpenConns: c.MaxOpenConns, Cluster: c.Cluster,
		Replicated: c.Replicated, ZooKeeperPath: c.ZooKeeperPath, ReadTimeout: c.ReadTimeout}
}

// redactURL hides the password of a URL with user info; a URL that does
// not parse is hidden whole (its error could quote it).
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "redacted"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "redacted")
			return u.String()
		}
	}
	return raw
}

// notify is the senders' outbound configuration.
func (c OutboundConfig) notify() notify.Outbound {
	return notify.Outbound{ProxyURL: c.ProxyURL, CAFile: c.CAFile}
}
