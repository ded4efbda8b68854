package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testenv"
)

// The shipped configuration file holds the defaults, every timeout key is
// read from the environment, and settings that would cut answers off are
// refused with the key named.
func TestTimeoutConfiguration(t *testing.T) {
	file, err := LoadConfig(filepath.Join(testenv.RepoRoot(), "configs", "telemetryd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultConfig()
	if file.Server.WriteTimeout != def.Server.WriteTimeout || file.Server.DeadlineReads != def.Server.DeadlineReads ||
		file.ClickHouse.ReadTimeout != def.ClickHouse.ReadTimeout || file.Postgres.StatementTimeout != def.Postgres.StatementTimeout {
		t.Errorf("configs/telemetryd.yaml differs from the defaults: %+v %+v %+v", file.Server, file.ClickHouse, file.Postgres)
	}
	t.Setenv("TELEMETRY_SERVER_DEADLINE_READS", "2m")
	t.Setenv("TELEMETRY_POSTGRES_STATEMENT_TIMEOUT", "5s")
	_, err = LoadConfig("")
	if err == nil || !strings.Contains(err.Error(), "server.write_timeout") {
		t.Fatalf("a deadline past the write timeout: %v", err)
	}
	t.Setenv("TELEMETRY_SERVER_WRITE_TIMEOUT", "3m")
	c, err := LoadConfig("")
	if err != nil || c.Server.DeadlineReads != 2*time.Minute || c.Postgres.StatementTimeout != 5*time.Second {
		t.Fatalf("from the environment: %v %v %v", c.Server.DeadlineReads, c.Postgres.StatementTimeout, err)
	}
}
