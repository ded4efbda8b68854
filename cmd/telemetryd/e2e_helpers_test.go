package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/postgres"
)

var pg testenv.PostgresDB

// TestMain runs the tests several at once (testenv.RaiseParallel): each
// starts services of its own on a ClickHouse database and a PostgreSQL
// database of its own (pgURL), and most of their time is spent waiting on
// them, on flush intervals and on browsers.
func TestMain(m *testing.M) {
	testenv.RaiseParallel(4)
	code := m.Run()
	pg.Drop()
	removeBinary()
	os.Exit(code)
}

// pgURL is a PostgreSQL database of the test's own, migrated: a copy of the
// package's database, migrated once.
func pgURL(t *testing.T) string {
	t.Helper()
	return pg.Fresh(t, func(url string) error {
		ctx := context.Background()
		db, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 2}, quiet)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Migrate(ctx)
	})
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// ownServerConfig is testConfig on a ClickHouse of the test's own
// (testenv.OwnClickHouse): one server, not a cluster, also under `make
// test-cluster`.
func ownServerConfig(t *testing.T, chAddr string) Config {
	t.Helper()
	cfg := testConfig(t, chAddr)
	cfg.ClickHouse.Cluster, cfg.ClickHouse.Replicated = "", false
	return cfg
}

// testConfig is the service's configuration on the test servers: its own
// ClickHouse database, the package's Postgres database, a free port.
func testConfig(t *testing.T, chAddr string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.ClickHouse.Addr = []string{chAddr}
	cfg.ClickHouse.Database = testenv.Name("e2e")
	cfg.ClickHouse.Cluster = testenv.ClickHouseCluster() // `make test-cluster`
	cfg.ClickHouse.Replicated = testenv.ClickHouseReplicated()
	cfg.Postgres.URL = pgURL(t)
	cfg.Ingest.WALDir = t.TempDir()
	cfg.Ingest.FlushInterval = 200 * time.Millisecond
	cfg.Alerting.SecretKeyFile = t.TempDir() + "/secret.key"
	cfg.Nightly.Enabled = false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: cfg.ClickHouse.Addr, Database: cfg.ClickHouse.Database,
			Cluster: cfg.ClickHouse.Cluster}); err == nil {
			_ = chtest.DropDatabase(ctx, db)
			db.Close()
		}
	})
	return cfg
}

// startMain opens and runs the whole service in-process, stopping it when
// the test ends; it returns the service and its base URL.
func startMain(t *testing.T, cfg Config) (*Main, string) {
	t.Helper()
	m, base, _ := startStoppable(t, cfg)
	return m, base
}

// startStoppable is startMain with a function that stops the service
// before the test ends (called again at the end, it does nothing).
func startStoppable(t *testing.T, cfg Config) (*Main, string, func()) {
	t.Helper()
	m := NewMain(cfg, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Open(ctx); err != nil {
		cancel()
		m.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
			m.Close()
		})
	}
	t.Cleanup(stop)
	return m, "http://" + m.Addr(), stop
}

// api is a tiny JSON client for the tests.
type api struct {
	t    *testing.T
	base string
}

func (a api) do(method, path, token string, body any) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m
}

// must calls and fails the test unless the status is want.
func (a api) must(want int, method, path, token string, body any) map[string]any {
	a.t.Helper()
	status, m := a.do(method, path, token, body)
	if status != want {
		a.t.Fatalf("%s %s: status %d, want %d: %v", method, path, status, want, m)
	}
	return m
}

// newTenant signs up a person and creates an MCP with an ingest key.
func (a api) newTenant(name string) (token, mcpID, key string) {
	a.t.Helper()
	s := a.must(201, "POST", "/v1/auth/signup", "", map[string]any{
		"email": fmt.Sprintf("%s-%d@example.com", name, time.Now().UnixNano()), "password": "a long password", "name": name})
	token = s["token"].(string)
	mcpID = a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": name + " server"})["id"].(string)
	key = a.must(201, "POST", "/v1/mcps/"+mcpID+"/keys", token, map[string]any{"name": "k"})["key"].(string)
	return token, mcpID, key
}

// eventually retries f until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
