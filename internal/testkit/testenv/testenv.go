// Package testenv gives integration tests their real databases: the ClickHouse
// and PostgreSQL servers that `make test` starts, named by environment
// variables. Each call makes a fresh database that is dropped when the test
// ends, so packages running in parallel never see each other's data.
//
// Without a server a test is skipped, except under CI=true, where a missing
// server is a failure: CI must never pass by skipping.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Environment variables naming the test servers (set by `make test`).
const (
	EnvClickHouse = "TELEMETRY_TEST_CLICKHOUSE_ADDR" // host:port of the native protocol
	EnvPostgres   = "TELEMETRY_TEST_POSTGRES_URL"    // postgres://user@host:port/db?sslmode=disable
	// EnvClickHouseCluster names a cluster of the test ClickHouse server
	// (set by `make test-cluster`): store tests then run in cluster mode.
	EnvClickHouseCluster = "TELEMETRY_TEST_CLICKHOUSE_CLUSTER"
	// EnvClickHouseReplicated ("1") says that the cluster's shards have
	// replicas and ZooKeeper (the replicated topology of `make
	// test-cluster`): store tests then use replicated tables.
	EnvClickHouseReplicated = "TELEMETRY_TEST_CLICKHOUSE_REPLICATED"
)

// Defaults match the ports of `make test`.
const (
	DefaultClickHouse = "127.0.0.1:29000"
	DefaultPostgres   = "postgres://telemetry@127.0.0.1:25432/telemetry?sslmode=disable"
)

// ClickHouseAddr returns the test ClickHouse address, or skips (fails in CI)
// when nothing listens there.
func ClickHouseAddr(t testing.TB) string {
	t.Helper()
	addr := envOr(EnvClickHouse, DefaultClickHouse)
	require(t, "ClickHouse", addr)
	return addr
}

// ClickHouseCluster returns the cluster the store tests run on, or "" for
// a single server.
func ClickHouseCluster() string { return os.Getenv(EnvClickHouseCluster) }

// ClickHouseReplicated reports whether the test cluster is replicated.
func ClickHouseReplicated() bool {
	return ClickHouseCluster() != "" && os.Getenv(EnvClickHouseReplicated) == "1"
}

// PostgresURL returns the test PostgreSQL URL (of its maintenance database),
// or skips (fails in CI) when nothing listens there.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := envOr(EnvPostgres, DefaultPostgres)
	require(t, "PostgreSQL", hostPort(u))
	return u
}

// Name returns a fresh database name with the given prefix.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// InCI reports whether the tests run under CI=true.
func InCI() bool { return os.Getenv("CI") == "true" }

func require(t testing.TB, what, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
		return
	}
	msg := fmt.Sprintf("%s is not reachable at %s (%v); run the tests with `make test`", what, addr, err)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func hostPort(rawURL string) string {
	s := rawURL
	if i := strings.Index(s, "@"); i >= 0 {
		s = s[i+1:]
	} else if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?"); i >= 0 {
		s = s[:i]
	}
	return s
}

// WithDatabase returns rawURL with its database path replaced by db.
func WithDatabase(rawURL, db string) string {
	i := strings.Index(rawURL, "://")
	rest := rawURL[i+3:]
	q := ""
	if j := strings.Index(rest, "?"); j >= 0 {
		q = rest[j:]
		rest = rest[:j]
	}
	if j := strings.Index(rest, "/"); j >= 0 {
		rest = rest[:j]
	}
	return rawURL[:i+3] + rest + "/" + db + q
}

// Run runs a command with a timeout, for tests that drive servers through
// scripts (stopping ClickHouse in an outage test, say).
func Run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
