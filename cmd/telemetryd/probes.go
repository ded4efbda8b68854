package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/jobs"
	"github.com/mcpscope/telemetry/postgres"
	"github.com/mcpscope/telemetry/probe"
)

// ProbesConfig is the prober (docs/probes.md).
type ProbesConfig struct {
	// Enabled runs the checks on this instance (every instance may; the
	// lease keeps a probe from running twice at once).
	Enabled bool `mapstructure:"enabled"`
	// AllowPrivate lets probes reach loopback, private, link-local and
	// metadata addresses. Default false: such URLs are refused at create
	// and every check refuses such addresses at connect time.
	AllowPrivate bool `mapstructure:"allow_private"`
	// MaxPerAccount caps an account's probes.
	MaxPerAccount int `mapstructure:"max_per_account"`
	// Concurrency bounds the checks in flight per instance.
	Concurrency int `mapstructure:"concurrency"`
	// ResultDays keeps each check's result this many days (older days
	// are dropped hourly); the storage retention applies too.
	ResultDays int `mapstructure:"result_days"`
	// TestInterval, when set, replaces every probe's interval. Test-only:
	// the API keeps intervals at 30 s or more; tests set this to run
	// checks every second or so.
	TestInterval time.Duration `mapstructure:"test_interval"`
}

func defaultProbes() ProbesConfig {
	return ProbesConfig{Enabled: true, MaxPerAccount: alerting.MaxProbesPerAccount, Concurrency: 64, ResultDays: 90}
}

// validateProbes checks the prober's settings.
func (c Config) validateProbes(p *problems) {
	pc := c.Probes
	if pc.MaxPerAccount < 0 {
		p.bad("probes.max_per_account", "must be at least 0")
	}
	if pc.Concurrency < 1 {
		p.bad("probes.concurrency", "must be at least 1")
	}
	if pc.ResultDays < 1 {
		p.bad("probes.result_days", "must be at least 1")
	}
	if pc.TestInterval < 0 {
		p.bad("probes.test_interval", "must not be negative")
	}
}

// openProbes builds the probe service and the runner.
func (m *Main) openProbes(box *alerting.SecretBox) error {
	pc := m.Config.Probes
	checker := &probe.Checker{AllowPrivate: pc.AllowPrivate}
	if ca := m.Config.Alerting.Outbound.CAFile; ca != "" {
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("alerting.outbound.ca_file: %w", err)
		}
		roots.AppendCertsFromPEM(pem)
		checker.RootCAs = roots
	}
	m.ProbeStore = postgres.NewProbeStore(m.PG, box)
	m.Probes = &probe.Service{Store: m.ProbeStore, Results: m.CH.Reads, Checker: checker, MaxPerAccount: pc.MaxPerAccount, Log: m.Log}
	m.Prober = &probe.Runner{Store: m.ProbeStore, Results: m.CH.Sink, Inventory: m.Inventory, Checker: checker,
		Owner: m.Config.Ingest.NodeID, Concurrency: pc.Concurrency, IntervalOverride: pc.TestInterval, Log: m.Log}
	if pc.TestInterval > 0 {
		m.Prober.Poll = max(pc.TestInterval/4, 10*time.Millisecond)
	}
	m.Evaluator.Probes = m.ProbeStore
	return nil
}

// probeJobs are the prober (when enabled) and the hourly drop of old
// results.
func (m *Main) probeJobs() []func(context.Context) error {
	if !m.Config.Probes.Enabled {
		return nil
	}
	prune := m.job("probe-results-retention", func(ctx context.Context) error {
		return m.CH.DropProbeResultsBefore(ctx, time.Now().UTC().AddDate(0, 0, -m.Config.Probes.ResultDays+1).Truncate(24*time.Hour))
	})
	prune.Every = time.Hour
	return []func(context.Context) error{m.Prober.Run, func(ctx context.Context) error { return jobs.Run(ctx, prune) }}
}
