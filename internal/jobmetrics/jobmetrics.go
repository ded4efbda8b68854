// Package jobmetrics holds the Prometheus metrics of the background jobs:
// every job's passes (internal/jobs), and what the rule evaluator, the
// nightly pass and the delivery outbox did. The jobs themselves live in
// the domain packages, which import no metrics library: they report
// through small hooks (alerting.PassObserver, a success callback) that
// this package implements.
package jobmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"github.com/mcpscope/telemetry/internal/jobs"
)

// Evaluator counts what the rule evaluator does. It implements
// alerting.PassObserver.
type Evaluator struct {
	passes   *prometheus.CounterVec
	rules    prometheus.Counter
	firings  prometheus.Counter
	resolved prometheus.Counter
	failures prometheus.Counter
	deferred prometheus.Counter
	duration prometheus.Histogram
}

var _ alerting.PassObserver = (*Evaluator)(nil)

// NewEvaluator registers the evaluator's metrics on reg.
func NewEvaluator(reg prometheus.Registerer) *Evaluator {
	m := &Evaluator{
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
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "telemetry_alert_rules_deferred_total", Help: "Rules a pass left to the next one when it ran out of its time budget.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "telemetry_alert_evaluator_duration_seconds", Help: "Time of one evaluation pass.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}),
	}
	reg.MustRegister(m.passes, m.rules, m.firings, m.resolved, m.failures, m.deferred, m.duration)
	return m
}

// ObservePass implements alerting.PassObserver.
func (m *Evaluator) ObservePass(sum alerting.PassSummary, err error, took time.Duration) {
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
	m.deferred.Add(float64(sum.Deferred))
	m.duration.Observe(took.Seconds())
}

// NightlySuccess registers the nightly pass's last success time on reg and
// returns the callback that sets it (analytics.NightlyRunner.OnSuccess).
func NightlySuccess(reg prometheus.Registerer) func(time.Time) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "telemetry_nightly_last_success_timestamp_seconds",
		Help: "Unix time of the last successful nightly day computation."})
	reg.MustRegister(g)
	return func(t time.Time) { g.Set(float64(t.Unix())) }
}

// Outbox counts what the delivery outbox does. It implements
// notify.OutboxMetrics.
type Outbox struct {
	deliveries *prometheus.CounterVec
	depth      prometheus.Gauge
	oldest     prometheus.Gauge
	emailLimit prometheus.Gauge
	deferred   *prometheus.CounterVec
}

var _ notify.OutboxMetrics = (*Outbox)(nil)

// NewOutbox registers the outbox's metrics on reg.
func NewOutbox(reg prometheus.Registerer) *Outbox {
	m := &Outbox{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "telemetry_alert_deliveries_total",
			Help: "Email and team-chat delivery attempts by channel and outcome: sent, failed (given up), retried (failed, tried again later).",
		}, []string{"channel", "outcome"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "telemetry_alert_outbox_queued", Help: "Queued deliveries of the channels this instance sends (due or waiting for a retry).",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "telemetry_alert_outbox_oldest_due_seconds", Help: "Age of the oldest due queued delivery (0 when none is due).",
		}),
		emailLimit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "telemetry_alert_email_max_per_account_hour",
			Help: "alerting.email.max_per_account_hour: the emails one account may send in an hour (0: no bound).",
		}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "telemetry_alert_deliveries_deferred_total",
			Help: "Deliveries put back in the queue, unsent, because their account spent its hourly budget.",
		}, []string{"channel"}),
	}
	reg.MustRegister(m.deliveries, m.depth, m.oldest, m.emailLimit, m.deferred)
	return m
}

// EmailLimit shows the per-account hourly email budget.
func (m *Outbox) EmailLimit(n int) { m.emailLimit.Set(float64(n)) }

// Deferred implements notify.OutboxMetrics.
func (m *Outbox) Deferred(channel string, n int) {
	m.deferred.WithLabelValues(channel).Add(float64(n))
}

// Delivered implements notify.OutboxMetrics.
func (m *Outbox) Delivered(channel, outcome string, n int) {
	m.deliveries.WithLabelValues(channel, outcome).Add(float64(n))
}

// Queue implements notify.OutboxMetrics.
func (m *Outbox) Queue(depth int, oldestDue time.Duration) {
	m.depth.Set(float64(depth))
	m.oldest.Set(oldestDue.Seconds())
}

// Jobs counts the passes of every background job (internal/jobs). It
// implements jobs.Observer.
type Jobs struct {
	runs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
}

var _ jobs.Observer = (*Jobs)(nil)

// NewJobs registers the background jobs' metrics on reg.
func NewJobs(reg prometheus.Registerer) *Jobs {
	m := &Jobs{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "telemetry_job_runs_total",
			Help: "Passes of the background jobs (evaluator, renotify, nightly, retention, deletions, outbox) by outcome: ok or failed.",
		}, []string{"job", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "telemetry_job_duration_seconds", Help: "Time of one pass of a background job.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "telemetry_job_last_success_timestamp_seconds", Help: "Unix time of a background job's last successful pass.",
		}, []string{"job"}),
	}
	reg.MustRegister(m.runs, m.duration, m.lastSuccess)
	return m
}

// ObservePass implements jobs.Observer.
func (m *Jobs) ObservePass(job string, err error, took time.Duration) {
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	} else {
		m.lastSuccess.WithLabelValues(job).SetToCurrentTime()
	}
	m.runs.WithLabelValues(job, outcome).Inc()
	m.duration.WithLabelValues(job).Observe(took.Seconds())
}
