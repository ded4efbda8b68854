package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
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

// The delivery keys come from the environment under their pinned names;
// the SMTP URL is checked (plain SMTP only on loopback), an unreadable CA
// file is refused, and the redacted configuration hides the passwords.
func TestDeliveryConfiguration(t *testing.T) {
	file, err := LoadConfig(filepath.Join(testenv.RepoRoot(), "configs", "telemetryd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if file.Alerting.Delivery != DefaultConfig().Alerting.Delivery || file.Alerting.Chat.Enabled || file.Alerting.Email.SMTPURL != "" {
		t.Errorf("configs/telemetryd.yaml: %+v", file.Alerting)
	}
	t.Setenv("TELEMETRY_ALERTING_EMAIL_SMTP_URL", "smtp://alerts:hunter2-secret@mail.example.com:587")
	t.Setenv("TELEMETRY_ALERTING_EMAIL_FROM", "Alerts <alerts@example.com>")
	t.Setenv("TELEMETRY_ALERTING_CHAT_ENABLED", "true")
	t.Setenv("TELEMETRY_ALERTING_OUTBOUND_PROXY_URL", "http://proxy:proxy-secret@egress.internal:3128")
	c, err := LoadConfig("")
	if err != nil || !c.Alerting.Chat.Enabled || c.Alerting.Email.From != "Alerts <alerts@example.com>" {
		t.Fatalf("from the environment: %+v %v", c.Alerting, err)
	}
	if r := fmt.Sprintf("%+v", c.Redacted()); strings.Contains(r, "hunter2-secret") || strings.Contains(r, "proxy-secret") {
		t.Errorf("redacted configuration shows a password: %s", r)
	}
	for raw, key := range map[string]string{
		"smtp://mail.example.com:25?starttls=none": "alerting.email.smtp_url",
		"ftp://mail.example.com":                   "alerting.email.smtp_url",
	} {
		t.Setenv("TELEMETRY_ALERTING_EMAIL_SMTP_URL", raw)
		if _, err := LoadConfig(""); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", raw, err)
		}
	}
	t.Setenv("TELEMETRY_ALERTING_EMAIL_SMTP_URL", "smtp://127.0.0.1:1025?starttls=none")
	t.Setenv("TELEMETRY_ALERTING_EMAIL_FROM", "not an address")
	if _, err := LoadConfig(""); err == nil || !strings.Contains(err.Error(), "alerting.email.from") {
		t.Errorf("bad from: %v", err)
	}
	t.Setenv("TELEMETRY_ALERTING_EMAIL_FROM", "alerts@example.com")
	t.Setenv("TELEMETRY_ALERTING_OUTBOUND_CA_FILE", filepath.Join(t.TempDir(), "missing.pem"))
	if _, err := LoadConfig(""); err == nil || !strings.Contains(err.Error(), "alerting.outbound.ca_file") {
		t.Errorf("missing CA file: %v", err)
	}
}

// The cluster settings are checked by the store's own rule (one place),
// reported under the key at fault.
func TestClusterConfiguration(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cluster, zk string
		replicated  bool
		key         string // "" when valid
	}{
		{"", "", false, ""},
		{"c1", "/clickhouse/tables/{shard}", true, ""},
		{"", "/clickhouse/tables/{shard}", true, "clickhouse.replicated:"},
		{"c1", "/clickhouse/tables", true, "clickhouse.zookeeper_path:"},
		{"c 1'", "", false, "clickhouse.cluster:"},
	} {
		cfg := DefaultConfig()
		cfg.ClickHouse.Cluster, cfg.ClickHouse.Replicated = c.cluster, c.replicated
		if c.zk != "" {
			cfg.ClickHouse.ZooKeeperPath = c.zk
		}
		err := cfg.Validate()
		if c.key == "" && err != nil || c.key != "" && (err == nil || !strings.Contains(err.Error(), c.key)) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
