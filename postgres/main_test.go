package postgres

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

var pg testenv.PostgresDB

// TestMain runs the tests 4 at once (testenv.RaiseParallel): each makes
// its own rows, and those that read whole tables have a database of their
// own (testdb.Postgres).
func TestMain(m *testing.M) {
	testenv.RaiseParallel(4)
	pg.Main(m)
}

// testDB opens a pool on the package's database, migrated.
func testDB(t testing.TB) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Config{URL: pg.URL(t), MaxConns: 8}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// fixture is every account service on one database.
type fixture struct {
	db       *DB
	auth     *AuthService
	keys     *KeyService
	mcps     *MCPService
	members  *MemberService
	accounts *AccountService
}

func newFixture(t testing.TB, cfg accounts.AuthPolicy) *fixture {
	db := testDB(t)
	keys := NewKeyService(db, cfg.KeyCacheTTL)
	return &fixture{db: db, auth: NewAuthService(db, cfg, keys), keys: keys, mcps: NewMCPService(db, keys),
		members: NewMemberService(db), accounts: NewAccountService(db)}
}

const testPassword = "correct horse battery"

// email returns an address no other test uses.
func email(name string) string { return name + "-" + ids.RandomBase62(8) + "@example.com" }

func (f *fixture) signup(t testing.TB, name string) *accounts.Session {
	t.Helper()
	s, err := f.auth.Signup(context.Background(), accounts.Signup{Email: email(name), Password: testPassword, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) principal(t *testing.T, token string) *accounts.Principal {
	t.Helper()
	p, err := f.auth.AuthenticateSession(context.Background(), token)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return p
}

// wantCode fails unless err carries code (and, if given, field).
func wantCode(t *testing.T, err error, code string, field ...string) {
	t.Helper()
	if telemetry.ErrorCode(err) != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
	if len(field) > 0 && err.(*telemetry.Error).Field != field[0] {
		t.Fatalf("got field %q, want %q", err.(*telemetry.Error).Field, field[0])
	}
}
