-- Items carry the MCP protocol revision they were made under
-- (protocol_version, "" when the sender did not say), stored in events and
-- broken down by (GET /v1/mcps/{id}/breakdown?by=protocol_version).
--
-- The column is added to existing installations by ALTER. 18.16 has no
-- ADD COLUMN IF NOT EXISTS: the migration runner (migrate.go, addColumn)
-- runs such a statement without the clause, host by host, only where the
-- column is missing; later servers take it as written.
ALTER TABLE {{local "events"}} ADD COLUMN IF NOT EXISTS protocol_version LowCardinality(String) AFTER server_version;
{{alterDistributed "events" "ADD COLUMN IF NOT EXISTS protocol_version LowCardinality(String) AFTER server_version"}}

-- Per MCP per day per protocol version and client version, any method:
-- the breakdown by protocol_version (merging the client rows of each
-- version, a few a day) and the protocol versions of each client in the
-- insights' clients, with the states of breakdown_daily. A table of its
-- own rather than a seventh dimension of breakdown_daily: adding one there
-- would mean dropping and recreating that view (losing what is inserted
-- meanwhile) and two views writing one rollup, which the insert ledger
-- could not tell apart. Rows of events stored before this migration all
-- have "" as their protocol version; they are backfilled from events once,
-- while the table is empty, before the view exists (as in 005: run
-- `telemetryd migrate` with ingest stopped).
CREATE TABLE IF NOT EXISTS {{local "protocol_daily"}}
(
    mcp_id           String,
    day              Date,
    protocol_version String,
    client_name      String,
    client_version   String,
    is_error         UInt8,
    calls            AggregateFunction(count),
    errors           AggregateFunction(sum, UInt64),
    sessions         AggregateFunction(uniqHLL12, String),
    users            AggregateFunction(uniqHLL12, String),
    dur_n            AggregateFunction(sum, UInt64),
    dur_sum          AggregateFunction(sum, Float64),
    dur_q            AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, protocol_version, client_name, client_version, is_error)
SETTINGS index_granularity = 256;
{{distributed "protocol_daily"}}

INSERT INTO {{local "protocol_daily"}} (mcp_id, day, protocol_version, client_name, client_version, is_error, calls, errors, sessions, users, dur_n, dur_sum, dur_q)
SELECT
    mcp_id,
    toDate(ts) AS day,
    CAST(protocol_version AS String) AS protocol_version,
    CAST(client_name AS String) AS client_name,
    CAST(client_version AS String) AS client_version,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
WHERE (SELECT count() FROM {{local "protocol_daily"}}) = 0
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.protocol_daily_mv TO {{local "protocol_daily"}} AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    CAST(protocol_version AS String) AS protocol_version,
    CAST(client_name AS String) AS client_name,
    CAST(client_version AS String) AS client_version,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;
