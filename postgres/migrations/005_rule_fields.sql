-- 005: alerts people trust. Rules gain resolve notices, a snooze, a
-- minimum of calls, a week-ago baseline and more metrics; every transition
-- is kept as the rule's history.

ALTER TABLE rules
    ADD COLUMN notify_on_resolve boolean NOT NULL DEFAULT false,
    -- While in the future, transitions create no deliveries.
    ADD COLUMN snoozed_until timestamptz,
    ADD COLUMN min_calls integer NOT NULL DEFAULT 0 CHECK (min_calls >= 0),
    ADD COLUMN baseline text CHECK (baseline IN ('week_ago'));

ALTER TABLE rules DROP CONSTRAINT rules_metric_check;
ALTER TABLE rules ADD CONSTRAINT rules_metric_check
    CHECK (metric IN ('error_rate', 'errors', 'calls', 'p95_ms', 'p50_ms', 'p99_ms', 'sessions', 'users'));

-- One row per transition of a rule (fired: ok -> firing; resolved:
-- firing -> ok), written in the transaction that applies it, snoozed or
-- not. value is what the evaluation measured (null when the metric had no
-- value); threshold is the rule's at that moment. Deleting the rule
-- deletes its history (its deliveries stay).
CREATE TABLE rule_events (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    rule_id    text NOT NULL REFERENCES rules (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('fired', 'resolved')),
    value      double precision,
    threshold  double precision NOT NULL,
    created_at timestamptz NOT NULL
);
-- The history, newest first.
CREATE INDEX rule_events_rule_idx ON rule_events (rule_id, created_at DESC, id DESC);
