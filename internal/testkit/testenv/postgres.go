package testenv

import (
	"context"
	"os"
	"strings"
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

	prepared sync.Once
	prepErr  error
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

// Fresh returns the URL of a new database of the test's own, a copy of the
// package's database (CREATE DATABASE ... TEMPLATE), dropped when the test
// ends: tests that run in parallel (t.Parallel) and each start a service
// whose jobs read whole tables need databases apart. prepare runs once, on
// the package's database, before the first copy (migrations, so that each
// copy starts migrated); it must leave no connection open, since
// PostgreSQL copies only a database nobody is connected to. A package
// that uses Fresh must not use URL's database otherwise.
func (d *PostgresDB) Fresh(t testing.TB, prepare func(url string) error) string {
	t.Helper()
	url := d.URL(t)
	d.prepared.Do(func() { d.prepErr = prepare(url) })
	if d.prepErr != nil {
		t.Fatalf("prepare the test database: %v", d.prepErr)
	}
	name := Name("t")
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{d.name}.Sanitize()
	var err error
	for try := 0; try < 50; try++ {
		// "source database is being accessed by other users": a pool of
		// prepare's, or of a test's, may take a moment to hang up.
		if err = execMaintenance(d.maint, create); err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		_ = execMaintenance(d.maint, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return WithDatabase(url, name)
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
