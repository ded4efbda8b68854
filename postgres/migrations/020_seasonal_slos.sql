-- 020: rules that learn the week's rhythm (baseline 'seasonal' with a
-- sensitivity), the band they judged with kept in their history.

ALTER TABLE rules DROP CONSTRAINT IF EXISTS rules_baseline_check;
ALTER TABLE rules ADD CONSTRAINT rules_baseline_check CHECK (baseline IN ('week_ago', 'seasonal'));
-- Set (low, medium or high) exactly when the baseline is seasonal.
ALTER TABLE rules ADD COLUMN sensitivity text CHECK (sensitivity IN ('low', 'medium', 'high'));
ALTER TABLE rules ADD CONSTRAINT rules_sensitivity_seasonal
    CHECK ((sensitivity IS NOT NULL) = (baseline IS NOT DISTINCT FROM 'seasonal'));

-- A seasonal rule's expected band at the transition; null for other rules.
ALTER TABLE rule_events
    ADD COLUMN expected_low double precision,
    ADD COLUMN expected_high double precision;

-- Service level objectives (docs/slos.md). account_id is copied from the
-- MCP; deleting the MCP removes its SLOs (their deliveries stay, with
-- rule_id the SLO's id). state is the alert state the last evaluation
-- left: ok, ticket or page.
CREATE TABLE slos (
    id                text PRIMARY KEY,
    account_id        text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mcp_id            text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    name              text NOT NULL,
    kind              text NOT NULL CHECK (kind IN ('availability', 'latency')),
    objective         double precision NOT NULL CHECK (objective > 0 AND objective < 1),
    threshold_ms      double precision CHECK (threshold_ms > 0),
    tool              text,
    error_kinds       text[],
    window_days       integer NOT NULL CHECK (window_days BETWEEN 1 AND 90),
    channels          text[] NOT NULL,
    severity          text NOT NULL CHECK (severity IN ('ticket', 'page')),
    enabled           boolean NOT NULL DEFAULT true,
    state             text NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'ticket', 'page')),
    last_alert_at     timestamptz,
    snoozed_until     timestamptz,
    notify_on_resolve boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX slos_mcp_idx ON slos (mcp_id, created_at, id);
CREATE INDEX slos_account_idx ON slos (account_id);

-- Every alert-state change of an SLO, with the figures it was made on.
CREATE TABLE slo_events (
    id               text PRIMARY KEY,
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    slo_id           text NOT NULL REFERENCES slos (id) ON DELETE CASCADE,
    state            text NOT NULL CHECK (state IN ('ok', 'ticket', 'page')),
    budget_remaining double precision NOT NULL,
    burn_rates       jsonb NOT NULL,
    created_at       timestamptz NOT NULL
);
CREATE INDEX slo_events_slo_idx ON slo_events (slo_id, created_at DESC, id DESC);
