package main

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/jobmetrics"
	"github.com/mcpscope/telemetry/internal/jobs"
	"github.com/mcpscope/telemetry/postgres"
)

// job is a background job of this instance: its pass, logged and
// recorded in the jobs' metrics.
func (m *Main) job(name string, pass func(context.Context) error) jobs.Job {
	j := jobs.Job{Name: name, Pass: pass, Log: m.Log}
	if m.jobMetrics != nil {
		j.Observer = m.jobMetrics
	}
	return j
}

// storeJobs are the jobs that read ClickHouse: the nightly pass (at start
// to catch up, then on nightly.schedule, retention after it), the
// deletion worker and the rule evaluator.
func (m *Main) storeJobs() []jobs.Job {
	var out []jobs.Job
	if m.Config.Nightly.Enabled {
		nightly := m.job("nightly", m.nightlyRunner(nil, jobmetrics.NightlySuccess(m.Registry)).Pass)
		// The schedule was checked by Config.Validate.
		if sched, err := cron.ParseStandard(m.Config.Nightly.Schedule); err == nil {
			nightly.Schedule, nightly.Immediately = utcSchedule{sched}, true
			nightly.Then = []jobs.Job{m.job("retention", func(ctx context.Context) error {
				_, err := m.RunRetention(ctx, false, nil)
				return err
			})}
			out = append(out, nightly)
		} else {
			m.Log.Error("nightly.schedule: the nightly pass is off", "error", err)
		}
	}
	deletions := m.job("deletions", accounts.DeletionPass(m.Deletions,
		accounts.FlushedDeleter{TelemetryDeleter: m.CH, Log: m.Ingest}, m.Log))
	deletions.Every, deletions.Immediately = m.Config.Storage.DeletionPoll, true
	evaluator := m.job("evaluator", alerting.EvaluationPass(alerting.RulesAndSLOs{RuleEvaluator: m.Evaluator, SLOs: m.SLOEval}, m.Log, m.evalMetrics))
	evaluator.Every = m.Config.Alerting.EvaluateInterval
	evaluator.Timeout = alerting.PassTimeout(evaluator.Every)
	return append(out, deletions, evaluator)
}

// postgresJobs need only PostgreSQL: alerts already queued go out, and
// firing rules are re-notified, during a ClickHouse outage.
func (m *Main) postgresJobs() []jobs.Job {
	outbox := m.job("outbox", m.Outbox.Pass)
	outbox.Every, outbox.Immediately = m.Config.Alerting.Delivery.PollInterval, true
	outbox.Done = m.Outbox.Wait // the sends in flight end before Run returns
	renotify := m.job("renotify", alerting.RenotifyPass(postgres.NewEvaluationStore(m.PG), m.Log))
	renotify.Every = min(m.Config.Alerting.EvaluateInterval, time.Minute)
	sweep := m.job("key-cache-sweep", m.Keys.SweepPass)
	sweep.Every = postgres.SweepEvery
	expire := m.job("session-expiry", func(ctx context.Context) error {
		n, err := m.PG.ExpireSessions(ctx, m.Config.Storage.RetentionDays)
		if n > 0 {
			m.Log.Info("sessions: expired the state of idle identities", "identities", n)
		}
		return err
	})
	expire.Every = sessionExpiryEvery
	out := []jobs.Job{renotify, sweep, expire}
	if len(m.Outbox.Notifiers) > 0 {
		out = append(out, outbox)
	}
	return out
}

// sessionExpiryEvery is how often an instance expires the derived-session
// state of identities idle longer than the retention (docs/sessions.md).
const sessionExpiryEvery = time.Hour

// utcSchedule reads a cron schedule in UTC, as the nightly pass's days
// are.
type utcSchedule struct{ cron.Schedule }

func (s utcSchedule) Next(t time.Time) time.Time { return s.Schedule.Next(t.UTC()) }
