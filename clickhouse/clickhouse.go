// Package clickhouse stores telemetry items in ClickHouse and serves the
// metric reads, rule values and nightly figures from it. Open returns the
// store as role types over one connection-and-topology core (see DB):
// Reads implements analytics.Reader, analytics.Exporter and the window
// readers of the alert rules; Sink implements analytics.Sink; Lifecycle
// implements analytics.RetentionStore, accounts.TelemetryDeleter and
// analytics.NightlyService; Migrator migrates the schema.
//
// Every statement works on ClickHouse 18.16 (the development server) and on
// current releases: native protocol only (the HTTP interface of 18.16
// rejects the driver), inserts as one native block with a column list,
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
// Migration 005 adds session_span (per session: first and last instant,
// the session timeline's lookup), breakdown_daily (per dimension value
// and status: the breakdowns), mcp_hourly and tool_hourly (hourly series).
//
// Metric reads use only the rollups, so a three-year range costs a few
// thousand rollup rows, not a scan of every event; only the alert rule
// values (minutes-long windows), start-up scans, a session timeline (the
// events between the session's first and last instants, looked up in
// session_span) and the breakdowns without a rollup (user_id, attributes,
// filters; within a row budget) read events. Rollup rows
// of one key merge eventually, so every read GROUPs BY its key and reads
// the states with -Merge; a read is correct before and after merges.
//
// # Accuracy
//
// Percentiles are t-digest estimates (quantilesTDigest): exact for small
// samples, and within about 1% of the value's rank otherwise (measured on
// 18.16 matching the exact p95 of 10M rows). Distinct counts of sessions
// and users in reads use uniqHLL12 (cheap to merge over a year of daily
// states, unlike uniq): exact up to 16 distinct values (a state keeps a
// small exact set until then), and about 1.6% typical relative error
// beyond (measured against uniqExact over a seeded 20M-event history: RMS
// 1.1-1.6%, worst about 4% on large counts, and one or two units, up to
// 8%, just past 16). The nightly figures are exact: they count
// distinct (day, user) rows of user_daily.
//
// Duplicates are not removed here: ingest drops repeated item ids before
// they reach the store (RecentIDs rebuilds its filter), and the flusher
// skips write-ahead-log records already inserted (InsertedSeqs).
//
// # Cluster mode
//
// With Config.Cluster set, the store spreads over the shards of a cluster
// of the servers' remote_servers configuration. Every host of the cluster
// holds the local tables (events_local, mcp_daily_local, ...; the views
// read events_local into the local rollups) and Distributed tables over
// them named as the single-server tables are (events, mcp_daily, ...), so
// the reads are the same statements in both modes, and any host can
// answer them. Inserts go through the Distributed events table, sharded by
// cityHash64(mcp_id): each MCP's rows, and so its rollup rows, live on one
// shard, and a read of one MCP merges the -State columns of that shard
// (the others contribute nothing). Sums, counts, uniqHLL12 and t-digest states
// merge across shards anyway; the sharding keeps per-MCP figures exact
// where states would not merge exactly, and keeps one write-ahead-log
// record (one payload, one MCP) on one shard. The only statements that
// name a local table are IN subqueries: ClickHouse refuses a Distributed
// table inside a query over a Distributed table, and a shard's own rows
// are all the subquery needs since the MCP lives there.
//
// Distributed inserts are asynchronous by default (queued on the receiving
// host, sent later); the store sets insert_distributed_sync = 1 on its
// inserts, so an acknowledged insert is stored on its shard and the
// write-ahead log may let it go.
//
// Without replication the DDL is run on every host by the store itself
// (hosts listed by system.clusters of the first server), not with ON
// CLUSTER: on 18.16, ON CLUSTER needs the distributed DDL queue, hence
// ZooKeeper ("DDL background thread is not initialized" otherwise). Each
// host records its own schema_migrations.
//
// # Replicated tables
//
// With Config.Replicated the shards have replicas: every table holding
// rows is Replicated*MergeTree under Config.ZooKeeperPath (holding the
// {shard} macro) with the {replica} macro, the CREATE statements run once
// ON CLUSTER, and the backfill INSERTs once per shard (schema.go). Schema
// renders the DDL of any topology without a server (telemetryd schema).
// Retried inserts of the same block are also deduplicated by the
// replicated tables themselves (docs/operations.md, "Replicated tables").
package clickhouse

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse/native"
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
	// Cluster names a cluster of the servers' remote_servers
	// configuration: local tables on every host of it, Distributed tables
	// over them (see the package doc). Empty means a single server.
	Cluster string
	// Replicated says that the shards of Cluster have replicas kept by
	// ZooKeeper (or ClickHouse Keeper): tables are Replicated*MergeTree
	// under ZooKeeperPath, and the DDL runs ON CLUSTER through the
	// distributed DDL queue instead of host by host. The servers need
	// the {shard} and {replica} macros and internal_replication in the
	// cluster definition (docs/operations.md, "Replicated tables").
	Replicated bool
	// ZooKeeperPath prefixes the ZooKeeper path of every replicated table
	// (then /<database>/<table>); it must hold the {shard} macro. Default
	// DefaultZooKeeperPath.
	ZooKeeperPath string
	// ReadTimeout bounds every read on the server (max_execution_time,
	// whole seconds); a read that runs longer fails with EUNAVAILABLE. 0:
	// no bound.
	ReadTimeout time.Duration
	// DeletionGrace is how long a deletion keeps watching, once none of
	// the rows it deletes is left, for such rows other instances store
	// late (their flush lag); any that come are deleted too. 0: it returns
	// at once.
	DeletionGrace time.Duration
}

// Defaults of Config.
const (
	DefaultDatabase     = "telemetry"
	DefaultDialTimeout  = 5 * time.Second
	DefaultMaxOpenConns = 10
	// DefaultZooKeeperPath is the conventional prefix of replicated
	// tables' paths in ZooKeeper.
	DefaultZooKeeperPath = "/clickhouse/tables/{shard}"
)

var (
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	// clusterName is what an XML element name of remote_servers usually
	// is; it is quoted as a string wherever it appears in SQL.
	clusterName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)
	// zooKeeperPath is quoted as a string in SQL; the limits keep it
	// readable in ZooKeeper and in the rendered DDL.
	zooKeeperPath = regexp.MustCompile(`^/[A-Za-z0-9_.{}/-]{0,200}$`)
)

// ValidateCluster checks the cluster settings, the one place they are
// checked (Validate, the configuration loader and the schema command all
// call it): the cluster name's form and, for replicated tables, a cluster
// and a ZooKeeper path holding the {shard} macro. Errors are EINVALID with
// Field naming the configuration key.
func (c Config) ValidateCluster() error {
	if c.Cluster != "" && !clusterName.MatchString(c.Cluster) {
		return telemetry.FieldError(telemetry.EINVALID, "clickhouse.cluster", "cluster name %q must be letters, digits, '_', '.' or '-'", c.Cluster)
	}
	if !c.Replicated {
		return nil
	}
	if c.Cluster == "" {
		return telemetry.FieldError(telemetry.EINVALID, "clickhouse.replicated", "replicated tables need a cluster (clickhouse.cluster): replicas are the hosts of a cluster's shards")
	}
	if !zooKeeperPath.MatchString(c.ZooKeeperPath) || !strings.Contains(c.ZooKeeperPath, "{shard}") {
		return telemetry.FieldError(telemetry.EINVALID, "clickhouse.zookeeper_path", "zookeeper path %q must start with '/', hold the {shard} macro, or the shards would replicate each other, and only letters, digits, '_', '-', '.', '/', '{' and '}'", c.ZooKeeperPath)
	}
	return nil
}

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
	if c.Replicated && c.ZooKeeperPath == "" {
		c.ZooKeeperPath = DefaultZooKeeperPath
	}
	if err := c.ValidateCluster(); err != nil {
		return err
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxOpenConns <= 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	return nil
}

// DB is the store Open returns: the role types over one shared core (the
// connection pool and the topology). cmd/telemetryd hands each consumer
// only the role it needs (docs/ARCHITECTURE.md, "The ClickHouse store:
// roles over one core"):
//
//   - Reads: the metric reads, breakdowns, sessions, timelines, insights,
//     usage, nightly figures, export, and the window totals of the alert
//     rules (analytics.Reader, analytics.Exporter,
//     analytics.WindowSetBatchReader);
//   - Sink: the inserts of the ingest flusher and the ledger of its log
//     records (analytics.Sink);
//   - Lifecycle: retention, telemetry deletion and the nightly pass
//     (analytics.RetentionStore, accounts.TelemetryDeleter,
//     analytics.NightlyService);
//   - Migrator: migrations, replica sync, DDL on every host.
//
// DB embeds them all, so a command or a test holding the whole store
// calls any method directly. It is safe for concurrent use.
type DB struct {
	*core
	*Reads
	*Sink
	*Lifecycle
	*Migrator
}

// core is what every role shares: the connection pool, the database name,
// the cluster topology and the configuration. The helpers on it (query,
// local, onEveryHost, onEveryShard, ...) serve more than one role.
type core struct {
	conn driver.Conn
	// db is the database name, a checked identifier: statements qualify
	// every table with it, so the connection's default database is unused.
	db      string
	cluster string
	// cfg dials each host of a cluster for DDL.
	cfg Config
	// knobs are zero but in tests (export_test.go sets them).
	knobs testKnobs
}

// Reads serves the metric reads, the export and the alert rules' window
// totals.
type Reads struct {
	*core
	// reads holds idle connections for the reads decoded column by
	// column (nativeQuery), off the driver's pool.
	reads native.Pool
}

// Sink stores the ingest flusher's rows and keeps the ledger of its log
// records (ledger.go).
type Sink struct {
	*core
	// shardWeight caches the cluster's total shard weight (ledger.go).
	shardWeight atomic.Uint64
	// ins holds the insert connections and a spare block (inserter.go).
	ins inserts
}

// Lifecycle removes data: retention, telemetry deletion; and runs the
// nightly pass.
type Lifecycle struct{ *core }

// Migrator creates and upgrades the schema (migrations, replicated DDL)
// and runs DDL on every host.
type Migrator struct{ *core }

// testKnobs are the settings and hooks only tests change; their zero
// values are the production behaviour.
type testKnobs struct {
	// rawRows is the row budget of raw breakdowns and of the raw reads
	// of repeats and unknown tools; 0 means analytics.MaxRawBreakdownRows
	// and analytics.MaxRawFailureEvents (tests lower it).
	rawRows int
	// proveExport, set by the ClickHouse 26 proof, is given each export
	// query (which runs on a connection of its own, not conn).
	proveExport func(ctx context.Context, query string)
	// proveQuery, set by the ClickHouse 26 proof, is given each query of
	// nativeQuery once it succeeded (it does not go through conn).
	proveQuery func(ctx context.Context, query string)
	// proveInsert, set by the ClickHouse 26 proof, is given each insert
	// into events (INSERT INTO ... (columns)) and its block once 18.16
	// stored it (it does not go through conn).
	proveInsert func(query string, block chproto.Input, rows int)
	// exportChunk and exportCompress override exportChunkRows and the
	// choice of compression by address (1 on, -1 off).
	exportChunk    uint64
	exportCompress int
	// deletionPolled is given what each poll of a deletion found left
	// (to store a late row meanwhile).
	deletionPolled func(left uint64)
}

var (
	_ analytics.Reader         = (*Reads)(nil)
	_ analytics.WindowReader   = (*Reads)(nil)
	_ analytics.NightlyService = (*Lifecycle)(nil)
)

// Open prepares the connection pool to ClickHouse (native protocol, LZ4);
// it dials lazily, so it succeeds while the server is down (the service
// starts during an outage). Migrate creates the database and the tables;
// it fails with EUNAVAILABLE when the server cannot be reached, and with
// EINVALID when the cluster is not configured there.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conn, err := dial(cfg, cfg.Addr, cfg.MaxOpenConns)
	if err != nil {
		return nil, wrapErr("open", err)
	}
	c := &core{conn: conn, db: cfg.Database, cluster: cfg.Cluster, cfg: cfg}
	db := &DB{core: c, Reads: &Reads{core: c}, Sink: &Sink{core: c}, Lifecycle: &Lifecycle{c}, Migrator: &Migrator{c}}
	db.ins.conns.Options = nativeOptions(cfg, "telemetry-insert")
	db.reads.Options = nativeOptions(cfg, "telemetry-read")
	return db, nil
}

// nativeOptions are the options of the store's own native connections
// (native.Dial), named client in the server's query log.
func nativeOptions(cfg Config, client string) native.Options {
	return native.Options{Addrs: cfg.Addr, DialTimeout: cfg.DialTimeout,
		Username: cfg.Username, Password: cfg.Password, ClientName: client}
}

func dial(cfg Config, addr []string, maxConns int) (driver.Conn, error) {
	return clickhouse.Open(&clickhouse.Options{
		Protocol: clickhouse.Native,
		Addr:     addr,
		Auth: clickhouse.Auth{
			Database: "default",
			Username: cfg.Username,
			Password: cfg.Password,
		},
		Compression:     &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		DialTimeout:     cfg.DialTimeout,
		MaxOpenConns:    maxConns,
		MaxIdleConns:    maxConns,
		ConnMaxLifetime: time.Hour,
	})
}

// onEveryHost runs f on the store's connection on a single server, and on
// a connection to each host of the cluster otherwise (DDL: the tables of
// every host are its own).
func (db *core) onEveryHost(ctx context.Context, f func(context.Context, driver.Conn) error) error {
	if db.cluster == "" {
		return f(ctx, db.conn)
	}
	hosts, err := db.Hosts(ctx)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		conn, err := dial(db.cfg, []string{h}, 1)
		if err != nil {
			return fmt.Errorf("host %s: %w", h, err)
		}
		err = f(ctx, conn)
		conn.Close()
		if err != nil {
			return fmt.Errorf("host %s: %w", h, err)
		}
	}
	return nil
}

// ExecOnEveryHost runs one statement (DDL) on every host of the cluster,
// or once on a single server.
func (db *Migrator) ExecOnEveryHost(ctx context.Context, stmt string) error {
	return wrapErr("exec", db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		return conn.Exec(ctx, stmt)
	}))
}

// ExecWrite runs one statement that writes through the store's tables
// (INSERT ... SELECT), with the settings of an ingest insert: synchronous
// through Distributed tables, views fed in parallel.
func (db *Sink) ExecWrite(ctx context.Context, stmt string) error {
	return wrapErr("exec", db.conn.Exec(db.insertContext(ctx), stmt))
}

// Hosts lists the native-protocol address of every host of the cluster
// (every replica of every shard, as system.clusters of the server the
// store is connected to names them), or nil on a single server. They must
// be reachable from the service too: DDL runs on each of them.
func (db *core) Hosts(ctx context.Context) ([]string, error) {
	if db.cluster == "" {
		return nil, nil
	}
	type host struct {
		name string
		port uint16
	}
	var rows []host
	err := db.query(ctx, "cluster hosts", "SELECT host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num",
		[]any{db.cluster}, func() []any { h := appendRow(&rows); return []any{&h.name, &h.port} })
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, telemetry.Errorf(telemetry.EINVALID, "clickhouse: cluster %q is not in the remote_servers configuration of the server", db.cluster)
	}
	hosts := make([]string, len(rows))
	for i, h := range rows {
		hosts[i] = net.JoinHostPort(h.name, strconv.Itoa(int(h.port)))
	}
	return hosts, nil
}

// Ping checks that the server answers (for /health).
func (db *core) Ping(ctx context.Context) error {
	return wrapErr("ping", db.conn.Ping(ctx))
}

// Close closes the connection pool and the idle native connections.
func (db *DB) Close() error {
	db.ins.conns.Close()
	db.reads.Close()
	return db.conn.Close()
}

// Database returns the database name the store uses.
func (db *core) Database() string { return db.db }

// local names the table that holds a shard's own rows: name itself on a
// single server, name_local on a cluster (where name is the Distributed
// table over them). Only subqueries inside a read of a Distributed table
// name it.
func (db *core) local(name string) string {
	if db.cluster == "" {
		return db.db + "." + name
	}
	return db.db + "." + name + "_local"
}

// writeContext sets up a statement that writes through a Distributed table:
// synchronously, so that an acknowledged write is stored on its shard (by
// default the receiving host queues it and sends it later). Unchanged on a
// single server.
func (db *core) writeContext(ctx context.Context, settings clickhouse.Settings) context.Context {
	if settings = db.writeSettings(settings); settings == nil {
		return ctx
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(settings))
}

// writeSettings adds to settings (nil: none) those of a statement that
// writes through a Distributed table (writeContext), and returns them.
func (db *core) writeSettings(settings clickhouse.Settings) clickhouse.Settings {
	if db.cluster != "" {
		if settings == nil {
			settings = clickhouse.Settings{}
		}
		settings["insert_distributed_sync"] = 1
	}
	return settings
}

// Server exception codes that mean "try again later" rather than a bug.
var transientCodes = map[int32]bool{
	159: true, // TIMEOUT_EXCEEDED
	202: true, // TOO_MANY_SIMULTANEOUS_QUERIES
	209: true, // SOCKET_TIMEOUT
	210: true, // NETWORK_ERROR
	216: true, // QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING (an insert's earlier attempt)
	241: true, // MEMORY_LIMIT_EXCEEDED
	252: true, // TOO_MANY_PARTS
	279: true, // ALL_CONNECTION_TRIES_FAILED (a shard of a cluster is down)
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
		errors.Is(err, native.ErrClosed),
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
