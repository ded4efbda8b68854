// Package postgres implements the account, credential and alerting services
// on PostgreSQL 15 with pgx. Migrations are embedded numbered SQL files,
// applied under an advisory lock so that instances starting together apply
// each exactly once.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/password"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Advisory lock keys: one per job that must run once across instances.
const (
	LockMigrate   int64 = 0x74656c656d657401 // "telemet" 01
	LockEvaluator int64 = 0x74656c656d657402
	LockNightly   int64 = 0x74656c656d657403
	LockRetention int64 = 0x74656c656d657404
	// lockDeletions is the class of the per-account transaction locks
	// (pg_advisory_xact_lock(class, hashtext(account))) that serialize an
	// account's deletion requests against their limit.
	lockDeletions int32 = 0x74656c05
)

// Config names the database and sizes the pool.
type Config struct {
	URL      string
	MaxConns int32
	// StatementTimeout bounds every statement (PostgreSQL's
	// statement_timeout, whole milliseconds); a statement that runs longer
	// is cancelled by the server and answers EUNAVAILABLE. 0: no bound.
	// Migrations run without it.
	StatementTimeout time.Duration
}

// DB is the connection pool that every store in this package shares.
type DB struct {
	Pool *pgxpool.Pool
	log  *slog.Logger
	// DeletionsPerHour is how many deletion requests (a person's data,
	// deleting an MCP) an account may make per hour; 0 means
	// accounts.DefaultDeletionsPerHour.
	DeletionsPerHour int

	retryAt atomic.Int64 // unix nanoseconds: the end of an outage's pause (outage.go)
}

// Open connects to PostgreSQL. It does not wait for the server: the first
// query fails fast with EUNAVAILABLE if it is down.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*DB, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pc.ConnConfig.ConnectTimeout = 5 * time.Second
	if ms := cfg.StatementTimeout.Milliseconds(); ms > 0 {
		pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(ms, 10)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &DB{Pool: pool, log: log}, nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// Ping checks the server answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return wrap(db.Pool.QueryRow(ctx, "SELECT 1").Scan(&one))
}

// Migrate applies every embedded migration not applied yet, each in its own
// transaction, holding a session advisory lock for the whole run.
func (db *DB) Migrate(ctx context.Context) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return wrap(err)
	}
	defer conn.Release()
	// Waiting for another instance's migrations, and a migration itself,
	// may take longer than any request: no statement timeout here (RESET
	// restores the connection's default for whoever uses it next).
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return wrap(err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET statement_timeout") }()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", LockMigrate); err != nil {
		return wrap(err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", LockMigrate) }()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return wrap(err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return wrap(err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return wrap(err)
	}
	for _, v := range vs {
		applied[v] = true
	}
	files, err := migrationFiles()
	if err != nil {
		return err
	}
	for _, f := range files {
		if applied[f.version] {
			continue
		}
		body, err := migrations.ReadFile("migrations/" + f.name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("postgres: migration %s: %w", f.name, err)
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", f.version, f.name)
			return err
		})
		if err != nil {
			return err
		}
		db.log.Info("applied postgres migration", "migration", f.name)
	}
	return nil
}

type migrationFile struct {
	version int
	name    string
}

func migrationFiles() ([]migrationFile, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migrationFile
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("postgres: migration %q must start with a number and _", e.Name())
		}
		out = append(out, migrationFile{version: v, name: e.Name()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// wrap maps driver errors to domain errors, keeping the driver error as
// the cause (errors.Is/As see it; clients never do): an unreachable server becomes
// EUNAVAILABLE, no rows ENOTFOUND, a unique violation ECONFLICT, unstorable
// text EINVALID. Other errors pass through (they end as 500 internal, detail
// logged, not shown).
func wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &telemetry.Error{Code: telemetry.ENOTFOUND, Message: "Not found.", Err: err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return &telemetry.Error{Code: telemetry.ECONFLICT, Message: "It already exists.", Err: err}
		case pgErr.Code == "22021", pgErr.Code == "22P05":
			// Text PostgreSQL cannot store (NUL, invalid UTF-8) is bad input,
			// never a server error.
			return &telemetry.Error{Code: telemetry.EINVALID, Message: "The input contains characters that cannot be stored.", Err: err}
		case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", pgErr.Code == "53300",
			pgErr.Code == "57014": // query_canceled: statement_timeout
			return &telemetry.Error{Code: telemetry.EUNAVAILABLE, Message: "The database is unavailable.", RetryAfter: 5, Err: err}
		}
		return err
	}
	if errors.Is(err, password.ErrBusy) {
		return &telemetry.Error{Code: telemetry.EUNAVAILABLE, Message: "Too many sign-ins at once; try again in a moment.", RetryAfter: 1, Err: err}
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	// A server killed mid-statement ends the connection: unexpected EOF,
	// then "conn closed" for what was to follow on it.
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, pgconn.ErrConnClosed) || pgconn.Timeout(err) {
		return &telemetry.Error{Code: telemetry.EUNAVAILABLE, Message: "The database is unavailable.", RetryAfter: 5, Err: err}
	}
	return err
}
