package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpscope/telemetry/alerting"
)

// secretKey returns the key that seals webhook URLs: alerting.secret_key
// when set, else the file alerting.secret_key_file, which is created with a
// fresh random key (mode 0600) the first time. Several instances must share
// one key, so in production set secret_key (or point every instance at the
// same file); losing the key means reconnecting every webhook.
func secretKey(c AlertingConfig) ([]byte, error) {
	if c.SecretKey != "" {
		key, err := alerting.ParseSecretKey(c.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("alerting.secret_key: %w", err)
		}
		return key, nil
	}
	path := c.SecretKeyFile
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		text, err = createKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("alerting.secret_key_file: %w", err)
	}
	key, err := alerting.ParseSecretKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("alerting.secret_key_file %s: %w", path, err)
	}
	return key, nil
}

// createKeyFile writes a new random key to path, failing if the file
// appeared meanwhile (another instance starting at the same moment), in
// which case that instance's key is read instead.
func createKeyFile(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, alerting.SecretKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	text := []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return text, f.Close()
}

// evaluatorMetrics count what the evaluator does. A nil *evaluatorMetrics
// records nothing.
type evaluatorMetrics struct {
	passes   *prometheus.CounterVec
	rules    prometheus.Counter
	firings  prometheus.Counter
	resolved prometheus.Counter
	failures prometheus.Counter
	duration prometheus.Histogram
}

func newEvaluatorMetrics(reg prometheus.Registerer) *evaluatorMetrics {
	m := &evaluatorMetrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "telemetry_alert_evaluator_runs_total",
			Help: "Evaluation passes by outcome: ok, failed (some rules could not be evaluated), skipped (another instance was evaluating).",
		}, []string{"outcome"}),
		rules: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_alert_rules_evaluated_total", Help: "Enabled rules measured by evaluation passes.",
		}),
		firings: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_alert_firings_total", Help: "Rules that fired (ok -> firing) in evaluation passes.",
		}),
		resolved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_alert_resolutions_total", Help: "Rules that resolved (firing -> ok) in evaluation passes.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_alert_rule_failures_total", Help: "Rules left unchanged by a pass because of an error.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "telemetry_alert_evaluator_duration_seconds", Help: "Time of one evaluation pass.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}),
	}
	reg.MustRegister(m.passes, m.rules, m.firings, m.resolved, m.failures, m.duration)
	return m
}

func (m *evaluatorMetrics) record(sum alerting.PassSummary, err error, took time.Duration) {
	if m == nil {
		return
	}
	switch {
	case sum.Skipped:
		m.passes.WithLabelValues("skipped").Inc()
		return
	case err != nil:
		m.passes.WithLabelValues("failed").Inc()
	default:
		m.passes.WithLabelValues("ok").Inc()
	}
	m.rules.Add(float64(sum.Rules))
	m.firings.Add(float64(sum.Fired))
	m.resolved.Add(float64(sum.Resolved))
	m.failures.Add(float64(sum.Failed))
	m.duration.Observe(took.Seconds())
}

// runEvaluator evaluates every enabled rule each interval until ctx ends. A
// pass slower than the interval delays the next one (ticks are dropped, not
// queued); a pass is bounded by a timeout, so a stuck dependency cannot hold
// the evaluator, and its advisory lock, forever. Stopping cancels the pass
// in flight, whose open transition rolls back: no half-fired rule.
func runEvaluator(ctx context.Context, ev alerting.Evaluator, interval time.Duration, log *slog.Logger, metrics *evaluatorMetrics) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(interval, time.Minute))
		start := time.Now()
		sum, err := ev.EvaluateAll(pctx, start)
		cancel()
		took := time.Since(start)
		metrics.record(sum, err, took)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("rule evaluation pass failed", "error", err.Error(), "rules", sum.Rules, "failed", sum.Failed, "fired", sum.Fired)
		case sum.Fired > 0 || sum.Resolved > 0:
			log.Info("rule evaluation pass", "rules", sum.Rules, "fired", sum.Fired, "resolved", sum.Resolved, "took", took)
		}
	}
}
