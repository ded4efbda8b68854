// Package clickhouse stores telemetry items in ClickHouse and serves the
// metric reads, rule values and nightly figures from it. It implements
// analytics.Reader, analytics.WindowReader and analytics.NightlyService.
//
// Every statement works on ClickHouse 18.16 (the development server) and on
// current releases: native protocol only (the HTTP interface of 18.16
// rejects the driver), inserts through PrepareBatch with a column list,
// no DateTime64, Map, TTL, codecs, window functions, CTEs or WITH FILL.
//
// # Schema
//
// The raw table events (migrations/001_events.sql) holds one row per item,
// partitioned by UTC day, sorted by (mcp_id, ts): every read concerns one
// MCP, rule windows and start-up scans filter on time, and a day
// partition is what retention drops. Reads filter on the raw ts range
// (ts >= toDateTime(...) AND ts < ...), never toDate(ts), which 18.16 does
// not prune on.
//
// Materialized views feed rollups (migrations/002_rollups.sql), one per
// read shape, each sorted by (mcp_id, day, ...):
//
//   - mcp_daily: per MCP per day, any method (overview);
//   - tool_daily: per tool per day, tools/call (tools, tool detail,
//     slowest, failing and idle tools);
//   - session_daily: per session per day (sessions list);
//   - error_daily: per (method, name, error type) per day, errors only
//     (error types, top errors);
//   - client_daily: per (client, version) per day (client shares);
//   - tool_client_daily: per tool per client per day (the tool's clients);
//   - user_daily: per user per day (nightly figures, exact);
//   - usage_daily: per account per acceptance day per MCP (usage).
//
// Metric reads use only the rollups, so a three-year range costs a few
// thousand rollup rows, not a scan of every event; only the alert rule
// values (minutes-long windows) and start-up scans read events. Rollup rows
// of one key merge eventually, so every read GROUPs BY its key and reads
// the states with -Merge; a read is correct before and after merges.
//
// # Accuracy
//
// Percentiles are t-digest estimates (quantilesTDigest): exact for small
// samples, and within about 1% of the value's rank otherwise (measured on
// 18.16 matching the exact p95 of 10M rows). Distinct counts of sessions
// and users in reads use uniq: exact below about 65,000 distinct values,
// within about 0.5% above. The nightly figures are exact: they count
// distinct (day, user) rows of user_daily.
//
// Duplicates are not removed here: ingest drops repeated item ids before
// they reach the store (RecentIDs rebuilds its filter), and the flusher
// skips write-ahead-log records already inserted (InsertedSeqs).
package clickhouse

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Config names the ClickHouse server and database.
type Config struct {
	// Addr lists host:port addresses of the native protocol (port 9000 by
	// default on a server).
	Addr     []string
	Database string
	Username string
	Password string
	// DialTimeout bounds connecting and waiting for a pooled connection;
	// default 5 s.
	DialTimeout time.Duration
	// MaxOpenConns caps the pool; default 10. Queries beyond it wait.
	MaxOpenConns int
	// Cluster names a cluster for ON CLUSTER DDL with replicated engines.
	// Empty means a single server. The migrations are templated for it,
	// but reads do not go through Distributed tables yet, so Open refuses
	// a cluster for now.
	Cluster string
}

// Defaults of Config.
const (
	DefaultDatabase     = "telemetry"
	DefaultDialTimeout  = 5 * time.Second
	DefaultMaxOpenConns = 10
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if len(c.Addr) == 0 {
		return telemetry.Errorf(telemetry.EINVALID, "clickhouse: at least one address is required")
	}
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if !identifier.MatchString(c.Database) {
		return telemetry.Errorf(telemetry.EINVALID, "clickhouse: database name %q must be a plain identifier", c.Database)
	}
	if c.Cluster != "" {
		return telemetry.Errorf(telemetry.EINVALID, "clickhouse: cluster %q: cluster mode is not supported yet", c.Cluster)
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxOpenConns <= 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	return nil
}

// DB is a ClickHouse-backed telemetry store. It is safe for concurrent use.
type DB struct {
	conn driver.Conn
	// db is the database name, a checked identifier: statements qualify
	// every table with it, so the connection's default database is unused.
	db      string
	cluster string
}

var (
	_ analytics.Reader         = (*DB)(nil)
	_ analytics.WindowReader   = (*DB)(nil)
	_ analytics.NightlyService = (*DB)(nil)
)

// Open connects to ClickHouse (native protocol, LZ4) and creates the
// database if it is missing. Call Migrate to create the tables. It fails
// with EUNAVAILABLE when the server cannot be reached.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Protocol: clickhouse.Native,
		Addr:     cfg.Addr,
		Auth: clickhouse.Auth{
			Database: "default",
			Username: cfg.Username,
			Password: cfg.Password,
		},
		Compression:     &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		DialTimeout:     cfg.DialTimeout,
		MaxOpenConns:    cfg.MaxOpenConns,
		MaxIdleConns:    cfg.MaxOpenConns,
		ConnMaxLifetime: time.Hour,
	})
	if err != nil {
		return nil, wrapErr("open", err)
	}
	db := &DB{conn: conn, db: cfg.Database, cluster: cfg.Cluster}
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db.db+db.onCluster()); err != nil {
		conn.Close()
		return nil, wrapErr("create database", err)
	}
	return db, nil
}

// Ping checks that the server answers (for /health).
func (db *DB) Ping(ctx context.Context) error {
	return wrapErr("ping", db.conn.Ping(ctx))
}

// Close closes the connection pool.
func (db *DB) Close() error {
	return db.conn.Close()
}

// Database returns the database name the store uses.
func (db *DB) Database() string { return db.db }

func (db *DB) onCluster() string {
	if db.cluster == "" {
		return ""
	}
	return " ON CLUSTER " + db.cluster
}

// Server exception codes that mean "try again later" rather than a bug.
var transientCodes = map[int32]bool{
	159: true, // TIMEOUT_EXCEEDED
	202: true, // TOO_MANY_SIMULTANEOUS_QUERIES
	209: true, // SOCKET_TIMEOUT
	210: true, // NETWORK_ERROR
	241: true, // MEMORY_LIMIT_EXCEEDED
	252: true, // TOO_MANY_PARTS
	394: true, // QUERY_WAS_CANCELLED
}

// retryAfterSeconds is the Retry-After suggested with EUNAVAILABLE.
const retryAfterSeconds = 5

// wrapErr names the operation and classifies err: a server that cannot be
// reached, times out or sheds load becomes EUNAVAILABLE (503, retry);
// anything else stays an internal error. The cause stays in the chain for
// logs.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var te *telemetry.Error
	if errors.As(err, &te) {
		return err
	}
	if isTransient(err) {
		unavailable := &telemetry.Error{
			Code:       telemetry.EUNAVAILABLE,
			Message:    "The metrics store is unavailable; try again shortly.",
			RetryAfter: retryAfterSeconds,
		}
		return fmt.Errorf("clickhouse: %s: %w: %w", op, unavailable, err)
	}
	return fmt.Errorf("clickhouse: %s: %w", op, err)
}

func isTransient(err error) bool {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return transientCodes[ex.Code]
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, clickhouse.ErrAcquireConnTimeout),
		errors.Is(err, clickhouse.ErrConnectionClosed),
		errors.Is(err, sqldriver.ErrBadConn),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &ne):
		return true
	}
	return false
}
