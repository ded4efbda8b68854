package testenv

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresDB is one test package's own PostgreSQL database, created on first
// use and dropped when the package's tests end:
//
//	var pg testenv.PostgresDB
//
//	func TestMain(m *testing.M) { pg.Main(m) }
//
// Tests then call pg.URL(t), which skips (fails under CI) without a server.
type PostgresDB struct {
	once  sync.Once
	maint string
	name  string
	url   string
	err   error
}

// URL returns the URL of the package's database, creating it on first use.
func (d *PostgresDB) URL(t testing.TB) string {
	t.Helper()
	maint := PostgresURL(t)
	d.once.Do(func() {
		d.maint, d.name = maint, Name("t")
		d.err = execMaintenance(maint, "CREATE DATABASE "+pgx.Identifier{d.name}.Sanitize())
		d.url = WithDatabase(maint, d.name)
	})
	if d.err != nil {
		t.Fatalf("create test database: %v", d.err)
	}
	return d.url
}

// Main runs the package's tests, drops the database and exits.
func (d *PostgresDB) Main(m *testing.M) {
	code := m.Run()
	d.Drop()
	os.Exit(code)
}

// Drop removes the database, closing whatever connections are left.
func (d *PostgresDB) Drop() {
	if d.name == "" || d.err != nil {
		return
	}
	_ = execMaintenance(d.maint, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)")
}

func execMaintenance(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
