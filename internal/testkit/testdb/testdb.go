// Package testdb gives integration tests migrated databases of their own on
// the test servers (internal/testkit/testenv) and the rows the alerting tests start
// from: accounts with people and MCPs, made with plain SQL, and telemetry
// items in ClickHouse.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/postgres"
)

// Quiet is a logger that discards everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Postgres creates a fresh, migrated PostgreSQL database dropped when the
// test ends, and returns its URL and a pool on it. Tests that read whole
// tables (the evaluator's pass) need one of their own; others can share the
// package's testenv.PostgresDB.
func Postgres(t testing.TB) (string, *postgres.DB) {
	t.Helper()
	d := new(testenv.PostgresDB)
	url := d.URL(t)
	t.Cleanup(d.Drop) // registered first, so it runs after the pool closes
	db := OpenPostgres(t, url)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return url, db
}

// OpenPostgres opens another pool on url (a second "instance"), closed when
// the test ends.
func OpenPostgres(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url, MaxConns: 8}, Quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// ClickHouse creates a fresh, migrated ClickHouse database dropped when the
// test ends.
func ClickHouse(t testing.TB) *clickhouse.DB {
	t.Helper()
	addr := testenv.ClickHouseAddr(t)
	ctx := context.Background()
	name := testenv.Name("t")
	db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{addr}, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := chtest.DropDatabase(context.Background(), db); err != nil {
			t.Errorf("drop database: %v", err)
		}
		db.Close()
	})
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// RandHex returns n random bytes in hex.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Team is an account with people and one MCP.
type Team struct {
	AccountID string
	Users     []string // Users[0] is the owner, Users[1] an admin, the rest members
	MCPID     string
}

// NewTeam creates an account with size people (joined in order) and one MCP.
func NewTeam(t testing.TB, db *postgres.DB, size int) Team {
	t.Helper()
	ctx := context.Background()
	tm := Team{AccountID: "acc_" + RandHex(8)}
	Exec(t, db, `INSERT INTO accounts (id, name) VALUES ($1, 'Team')`, tm.AccountID)
	ids, emails := make([]string, size), make([]string, size)
	for i := range ids {
		ids[i] = "usr_" + RandHex(8)
		emails[i] = ids[i] + "@example.com"
	}
	Exec(t, db, `INSERT INTO users (id, email, email_key, name, password_hash)
		SELECT u, e, e, 'Person', 'x' FROM unnest($1::text[], $2::text[]) AS t(u, e)`, ids, emails)
	_, err := db.Pool.Exec(ctx, `INSERT INTO memberships (account_id, user_id, role, joined_at)
		SELECT $1, u, CASE n WHEN 1 THEN 'owner' WHEN 2 THEN 'admin' ELSE 'member' END, now() + n * interval '1 microsecond'
		FROM unnest($2::text[]) WITH ORDINALITY AS t(u, n)`, tm.AccountID, ids)
	if err != nil {
		t.Fatal(err)
	}
	tm.Users = ids
	tm.MCPID = AddMCP(t, db, tm.AccountID)
	return tm
}

// AddMCP adds an MCP to an account and returns its id.
func AddMCP(t testing.TB, db *postgres.DB, accountID string) string {
	t.Helper()
	id := "mcp_" + RandHex(8)
	Exec(t, db, `INSERT INTO mcps (id, account_id, name) VALUES ($1, $2, 'MCP')`, id, accountID)
	return id
}

// Exec runs a statement or fails the test.
func Exec(t testing.TB, db *postgres.DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Events writes calls items of the MCP at `at` (the first errors of them
// failing, durations 100 ms and up): tools/call items of tool when tool is
// not empty, resources/read otherwise.
func Events(t testing.TB, cdb *clickhouse.DB, accountID, mcpID, tool string, at time.Time, calls, errors int) {
	t.Helper()
	rows := make([]analytics.StoredRow, calls)
	for i := range rows {
		d := float64(100 + i)
		it := analytics.Item{ID: RandHex(8), Timestamp: at, SessionID: "s-1", Method: "resources/read", Status: analytics.StatusOK, DurationMs: &d}
		if tool != "" {
			it.Method, it.Name = "tools/call", tool
		}
		if i < errors {
			it.Status, it.ErrorType = analytics.StatusError, "TimeoutError"
		}
		rows[i] = analytics.StoredRow{AccountID: accountID, MCPID: mcpID, Node: "test", Seq: uint64(i), ReceivedAt: at, Item: it}
	}
	if err := cdb.InsertRows(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}
