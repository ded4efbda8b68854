package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Server is a database server of the test's own, for tests that stop and
// start it (outages) without disturbing the shared test servers.
type Server struct {
	Addr string
	dir  string
	port int
}

// OwnClickHouse starts a private ClickHouse in a temporary directory on a
// free port and stops it when the test ends. Needs clickhouse-server
// installed (`make test` installs it).
func OwnClickHouse(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("clickhouse-server"); err != nil {
		msg := "clickhouse-server is not installed; run the tests with `make test`"
		if InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{dir: t.TempDir(), port: FreePort(t)}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", s.port)
	s.Start(t)
	t.Cleanup(func() { _, _ = dbctl("stop-ch", s.dir) })
	return s
}

// Start starts (or restarts) the server and waits until it listens.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if out, err := dbctl("start-ch", s.dir, fmt.Sprint(s.port)); err != nil {
		t.Fatalf("start ClickHouse: %v\n%s", err, out)
	}
}

// Stop stops the server and waits until it has exited.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if out, err := dbctl("stop-ch", s.dir); err != nil {
		t.Fatalf("stop ClickHouse: %v\n%s", err, out)
	}
}

// FreePort returns a TCP port nothing listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// RepoRoot is the directory holding go.mod.
func RepoRoot() string {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func dbctl(args ...string) (string, error) {
	return Run(context.Background(), filepath.Join(RepoRoot(), "scripts", "dbctl.sh"), args...)
}

// PostgresServer is a PostgreSQL of the test's own, for outage tests.
type PostgresServer struct {
	URL  string // of its "telemetry" database
	dir  string
	port int
}

// OwnPostgres starts a private PostgreSQL in a temporary directory on a
// free port and stops it when the test ends. Needs PostgreSQL installed
// (`make test` installs it).
func OwnPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		if _, err := exec.LookPath("initdb"); err != nil {
			msg := "PostgreSQL is not installed; run the tests with `make test`"
			if InCI() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	// Not t.TempDir: as root, PostgreSQL runs as nobody, who must reach it.
	dir, err := os.MkdirTemp("", "telemetry-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &PostgresServer{dir: dir, port: FreePort(t)}
	s.URL = fmt.Sprintf("postgres://telemetry@127.0.0.1:%d/telemetry?sslmode=disable", s.port)
	s.Start(t)
	t.Cleanup(func() {
		_, _ = dbctl("stop", s.dir)
		os.RemoveAll(s.dir)
	})
	return s
}

// Start starts (or restarts) the server and waits until it takes
// connections.
func (s *PostgresServer) Start(t testing.TB) {
	t.Helper()
	if out, err := dbctl("start-pg", s.dir, fmt.Sprint(s.port)); err != nil {
		t.Fatalf("start PostgreSQL: %v\n%s", err, out)
	}
}

// Kill kills the server with SIGKILL (a crash: the next Start recovers).
func (s *PostgresServer) Kill(t testing.TB) {
	t.Helper()
	if out, err := dbctl("kill-pg", s.dir); err != nil {
		t.Fatalf("kill PostgreSQL: %v\n%s", err, out)
	}
}
