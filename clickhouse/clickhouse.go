// Package clickhouse stores telemetry in ClickHouse and reads metrics back.
package clickhouse

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Config names the ClickHouse server.
type Config struct {
	Addr         []string
	Database     string
	Username     string
	Password     string
	DialTimeout  time.Duration
	MaxOpenConns int
	Cluster      string
}

// DB is a ClickHouse connection pool bound to one database.
type DB struct {
	conn driver.Conn
	cfg  Config
}

// Open connects with the native protocol (HTTP fails against 18.16) and
// creates the database if missing.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	conn, err := ch.Open(&ch.Options{
		Addr:         cfg.Addr,
		Auth:         ch.Auth{Database: "default", Username: cfg.Username, Password: cfg.Password},
		DialTimeout:  cfg.DialTimeout,
		MaxOpenConns: cfg.MaxOpenConns,
		Compression:  &ch.Compression{Method: ch.CompressionLZ4},
	})
	if err != nil {
		return nil, err
	}
	return &DB{conn: conn, cfg: cfg}, nil
}

// Close closes the pool.
func (db *DB) Close() error { return db.conn.Close() }

// Ping checks the server answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.conn.Ping(ctx); err != nil {
		return &telemetry.Error{Code: telemetry.EUNAVAILABLE, Message: "ClickHouse is unavailable.", RetryAfter: 5}
	}
	return nil
}

// Migrate applies the embedded statements; each is idempotent.
func (db *DB) Migrate(ctx context.Context) error {
	if err := db.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db.cfg.Database); err != nil {
		return err
	}
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		body, _ := migrations.ReadFile("migrations/" + n)
		for _, stmt := range strings.Split(string(body), ";\n") {
			stmt = strings.TrimSpace(strings.ReplaceAll(stmt, "{db}", db.cfg.Database))
			if stmt == "" {
				continue
			}
			if err := db.conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
	}
	return nil
}
