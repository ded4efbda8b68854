package main

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
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
			Email:    EmailConfig{MaxPerAccountHour: notify.DefaultEmailPerAccountHour},
			Delivery: DeliveryConfig{Timeout: 10 * time.Second, RetryBase: notify.DefaultRetryBase, PollInterval: time.Second, Concurrency: 32}},
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
