-- 018: probes (docs/probes.md). A probe checks one MCP server from the
-- outside every interval_seconds. Its headers (an Authorization header, say)
-- are sealed like webhook URLs (headers_sealed; reads show header_hints).
-- The probe's current state sits beside its definition; every check's
-- result goes to the metrics store (ClickHouse probe_results).
--
-- Scheduling is the outbox's: an instance claims due probes
-- (next_run_at <= now()) with FOR UPDATE SKIP LOCKED and a lease
-- (lease_owner, lease_until) a little longer than the probe's timeout, so a
-- probe never runs twice at once and a probe whose instance died is taken
-- by another once the lease ends.
CREATE TABLE probes (
    id                   text PRIMARY KEY,
    account_id           text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mcp_id               text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    url                  text NOT NULL,
    interval_seconds     integer NOT NULL CHECK (interval_seconds BETWEEN 1 AND 86400),
    timeout_ms           integer NOT NULL CHECK (timeout_ms > 0),
    headers_sealed       bytea,
    header_hints         jsonb NOT NULL DEFAULT '{}',
    enabled              boolean NOT NULL DEFAULT true,
    status               text NOT NULL DEFAULT 'unknown' CHECK (status IN ('up', 'down', 'unknown')),
    last_checked_at      timestamptz,
    last_error           text,
    latency_ms           double precision,
    protocol_version     text,
    tls_expires_at       timestamptz,
    consecutive_failures integer NOT NULL DEFAULT 0,
    down_since           timestamptz,
    next_run_at          timestamptz NOT NULL,
    lease_owner          text,
    lease_until          timestamptz,
    -- The badge's token is stored hashed: the badge URL is a bearer
    -- credential for the probe's status and uptime only.
    badge_token_hash     bytea UNIQUE,
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX probes_due_idx ON probes (next_run_at) WHERE enabled;
CREATE INDEX probes_mcp_idx ON probes (mcp_id, created_at);
CREATE INDEX probes_account_idx ON probes (account_id);
