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
