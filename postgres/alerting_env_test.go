package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testenv"
	"github.com/mcpscope/telemetry/postgres"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// alertingDB creates a fresh, migrated PostgreSQL database dropped when the
// test ends, and returns its URL and a pool on it.
func alertingDB(t testing.TB) (string, *postgres.DB) {
	t.Helper()
	base := testenv.PostgresURL(t)
	ctx := context.Background()
	name := testenv.Name("alerting")
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	admin.Close(ctx)
	url := testenv.WithDatabase(base, name)
	db := openPG(t, url)
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("drop database: %v", err)
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database: %v", err)
		}
	})
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return url, db
}

// openPG opens another pool on url (a second "instance"), closed at the end.
func openPG(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url, MaxConns: 8}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// windowDB creates a fresh, migrated ClickHouse database dropped at the end.
func windowDB(t testing.TB) *clickhouse.DB {
	t.Helper()
	addr := testenv.ClickHouseAddr(t)
	ctx := context.Background()
	name := testenv.Name("alerting")
	db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{addr}, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if conn, err := ch.Open(&ch.Options{Addr: []string{addr}}); err == nil {
			_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name)
			conn.Close()
		}
	})
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// team is an account with people and one MCP, made with plain SQL: the
// alerting stores only read these tables.
type team struct {
	AccountID string
	Users     []string // Users[0] is the owner, the rest members
	MCPID     string
}

// newTeam creates an account with size people and one MCP.
func newTeam(t testing.TB, db *postgres.DB, size int) team {
	t.Helper()
	ctx := context.Background()
	tm := team{AccountID: "acc_" + randHex(8), MCPID: "mcp_" + randHex(8)}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO accounts (id, name) VALUES ($1, 'Team')`, tm.AccountID); err != nil {
		t.Fatal(err)
	}
	ids, emails := make([]string, size), make([]string, size)
	for i := range ids {
		ids[i] = "usr_" + randHex(8)
		emails[i] = ids[i] + "@example.com"
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO users (id, email, email_key, name, password_hash)
		SELECT u, e, e, 'Person', 'x' FROM unnest($1::text[], $2::text[]) AS t(u, e)`, ids, emails)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Pool.Exec(ctx, `INSERT INTO memberships (account_id, user_id, role, joined_at)
		SELECT $1, u, CASE WHEN n = 1 THEN 'owner' ELSE 'member' END, now() + n * interval '1 microsecond'
		FROM unnest($2::text[]) WITH ORDINALITY AS t(u, n)`, tm.AccountID, ids)
	if err != nil {
		t.Fatal(err)
	}
	tm.Users = ids
	tm.MCPID = addMCP(t, db, tm.AccountID)
	return tm
}

// addMCP adds an MCP to an account.
func addMCP(t testing.TB, db *postgres.DB, accountID string) string {
	t.Helper()
	id := "mcp_" + randHex(8)
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO mcps (id, account_id, name) VALUES ($1, $2, 'MCP')`, id, accountID); err != nil {
		t.Fatal(err)
	}
	return id
}

// exec runs a statement in a test.
func exec(t testing.TB, db *postgres.DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// events writes calls items (errors of them failing) for mcp at `at`,
// tools/call of tool when tool is not empty.
func events(t testing.TB, cdb *clickhouse.DB, accountID, mcpID, tool string, at time.Time, calls, errors int) {
	t.Helper()
	rows := make([]clickhouse.Row, calls)
	for i := range rows {
		d := float64(100 + i)
		it := analytics.Item{ID: randHex(8), Timestamp: at, SessionID: "s-1", Method: "resources/read", Status: analytics.StatusOK, DurationMs: &d}
		if tool != "" {
			it.Method, it.Name = "tools/call", tool
		}
		if i < errors {
			it.Status, it.ErrorType = analytics.StatusError, "TimeoutError"
		}
		rows[i] = clickhouse.Row{AccountID: accountID, MCPID: mcpID, Node: "test", Seq: uint64(i), ReceivedAt: at, Item: it}
	}
	if err := cdb.InsertRows(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

// deliveryRow is a delivery as the tests inspect it.
type deliveryRow struct {
	RuleID, RuleName, Channel, Status string
	Recipient                         *string
}

func (d deliveryRow) String() string {
	r := "team"
	if d.Recipient != nil {
		r = *d.Recipient
	}
	return fmt.Sprintf("%s/%s/%s", d.Channel, r, d.Status)
}

// deliveries returns every delivery of a rule.
func deliveries(t testing.TB, db *postgres.DB, ruleID string) []deliveryRow {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT rule_id, rule_name, channel, status, recipient_user_id
		FROM deliveries WHERE rule_id = $1 ORDER BY channel, recipient_user_id`, ruleID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[deliveryRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// countBy counts deliveries by channel.
func countBy(ds []deliveryRow) map[string]int {
	out := map[string]int{}
	for _, d := range ds {
		out[d.Channel]++
	}
	return out
}

// testBox is a SecretBox with a fixed test key.
func testBox(t testing.TB) *alerting.SecretBox {
	t.Helper()
	key := make([]byte, alerting.SecretKeyLen)
	for i := range key {
		key[i] = byte(i + 1)
	}
	box, err := alerting.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// stores are the alerting stores on one database.
type stores struct {
	Channels *postgres.ChannelService
	Rules    *postgres.RuleService
	Inbox    *postgres.InboxService
	Log      *postgres.NotificationService
	Eval     *postgres.Evaluator
}

func newStores(t testing.TB, db *postgres.DB, cdb *clickhouse.DB) stores {
	s := stores{
		Channels: postgres.NewChannelService(db, testBox(t)),
		Rules:    postgres.NewRuleService(db),
		Inbox:    postgres.NewInboxService(db),
		Log:      postgres.NewNotificationService(db),
	}
	if cdb != nil {
		s.Eval = postgres.NewEvaluator(db, cdb, quietLog)
	}
	return s
}

const (
	slackURL   = "https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx"
	discordURL = "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz-_0123456789"
)

// errorRule is a rule that fires when the MCP's error rate over 5 minutes
// is above 10%.
func errorRule(channels ...string) alerting.RuleCreate {
	return alerting.RuleCreate{Name: "Errors", Metric: alerting.MetricErrorRate, Comparator: alerting.CompGT,
		Threshold: 0.1, WindowMinutes: 5, Channels: channels}
}

func ptr[T any](v T) *T { return &v }
