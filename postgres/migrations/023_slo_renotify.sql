-- SLO re-notification and history (docs/slos.md). renotify_minutes: while
-- an SLO stays in a state that notifies, its alert is delivered again
-- every so many minutes (null: never; bounds as for rules). A
-- re-notification moves last_alert_at, which the evaluator's conditional
-- write compares, so two instances cannot both re-notify. slo_events
-- records re-notifications too (renotify true, the state unchanged).
ALTER TABLE slos ADD COLUMN renotify_minutes integer CHECK (renotify_minutes BETWEEN 5 AND 10080);
ALTER TABLE slo_events ADD COLUMN renotify boolean NOT NULL DEFAULT false;
