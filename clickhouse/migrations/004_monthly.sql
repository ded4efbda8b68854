-- Monthly rollups: daily ones of 002 keyed by month (the first day of the
-- month), so that a long range merges a dozen month states plus the days
-- of its partial edge months instead of hundreds of day states (see
-- rangeRows in sql.go). Same states as the daily tables, so the two kinds
-- of rows merge together in one read. Only the reads that need no day
-- series use them (tool lists, insights): the overview and a tool's detail
-- merge every day state for their series anyway, and their WITH TOTALS
-- row costs little beside that (measured: a separate monthly totals query
-- made the overview slower).
--
-- Existing installations: each table is created, then backfilled from its
-- daily rollup (-MergeState: states merged by month, far cheaper than a
-- scan of events) only while it is empty, and only then is its view
-- created. A re-run after an interruption skips the backfill of a table
-- that already holds rows. Items inserted while a backfill runs (it takes
-- seconds) reach the daily rollups but may miss the monthly one, and two
-- migrations racing could both backfill; run
-- `telemetryd migrate` once, with ingest stopped, before starting the new
-- version, for exact long-range figures. On a fresh install every
-- backfill reads nothing.

-- Per MCP per month per tool, tools/call only: the tool lists and insights.
CREATE TABLE IF NOT EXISTS {{local "tool_monthly"}}
(
    mcp_id    String,
    month     Date,
    name      String,
    calls     AggregateFunction(count),
    errors    AggregateFunction(sum, UInt64),
    sessions  AggregateFunction(uniqHLL12, String),
    dur_n     AggregateFunction(sum, UInt64),
    dur_sum   AggregateFunction(sum, Float64),
    dur_q     AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8),
    last_seen AggregateFunction(max, UInt64)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(month)
ORDER BY (mcp_id, month, name)
SETTINGS index_granularity = 256;
{{distributed "tool_monthly"}}

INSERT INTO {{local "tool_monthly"}} (mcp_id, month, name, calls, errors, sessions, dur_n, dur_sum, dur_q, last_seen)
SELECT
    mcp_id,
    toStartOfMonth(day) AS month,
    name,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    uniqHLL12MergeState(sessions) AS sessions,
    sumMergeState(dur_n) AS dur_n,
    sumMergeState(dur_sum) AS dur_sum,
    quantilesTDigestIfMergeState(0.5, 0.95, 0.99)(dur_q) AS dur_q,
    maxMergeState(last_seen) AS last_seen
FROM {{local "tool_daily"}}
WHERE (SELECT count() FROM {{local "tool_monthly"}}) = 0
GROUP BY mcp_id, month, name;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.tool_monthly_mv TO {{local "tool_monthly"}} AS
SELECT
    mcp_id,
    toStartOfMonth(ts) AS month,
    name,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM {{local "events"}}
WHERE method = 'tools/call'
GROUP BY mcp_id, month, name;

-- Per MCP per month per (method, name, error type), error items only: the
-- insights' top errors.
CREATE TABLE IF NOT EXISTS {{local "error_monthly"}}
(
    mcp_id       String,
    month        Date,
    method       LowCardinality(String),
    name         String,
    error_type   LowCardinality(String),
    errors       AggregateFunction(count),
    last_message AggregateFunction(argMax, String, UInt64),
    last_seen    AggregateFunction(max, UInt64)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(month)
ORDER BY (mcp_id, month, method, name, error_type)
SETTINGS index_granularity = 256;
{{distributed "error_monthly"}}

INSERT INTO {{local "error_monthly"}} (mcp_id, month, method, name, error_type, errors, last_message, last_seen)
SELECT
    mcp_id,
    toStartOfMonth(day) AS month,
    method,
    name,
    error_type,
    countMergeState(errors) AS errors,
    argMaxMergeState(last_message) AS last_message,
    maxMergeState(last_seen) AS last_seen
FROM {{local "error_daily"}}
WHERE (SELECT count() FROM {{local "error_monthly"}}) = 0
GROUP BY mcp_id, month, method, name, error_type;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.error_monthly_mv TO {{local "error_monthly"}} AS
SELECT
    mcp_id,
    toStartOfMonth(ts) AS month,
    method,
    name,
    error_type,
    countState() AS errors,
    argMaxState(error_message, toUInt64(ts) * 1000 + ts_ms) AS last_message,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM {{local "events"}}
WHERE is_error = 1
GROUP BY mcp_id, month, method, name, error_type;

-- Per MCP per month per client (name, version), any method: the insights'
-- client shares.
CREATE TABLE IF NOT EXISTS {{local "client_monthly"}}
(
    mcp_id         String,
    month          Date,
    client_name    LowCardinality(String),
    client_version LowCardinality(String),
    calls          AggregateFunction(count),
    sessions       AggregateFunction(uniqHLL12, String)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(month)
ORDER BY (mcp_id, month, client_name, client_version)
SETTINGS index_granularity = 256;
{{distributed "client_monthly"}}

INSERT INTO {{local "client_monthly"}} (mcp_id, month, client_name, client_version, calls, sessions)
SELECT
    mcp_id,
    toStartOfMonth(day) AS month,
    client_name,
    client_version,
    countMergeState(calls) AS calls,
    uniqHLL12MergeState(sessions) AS sessions
FROM {{local "client_daily"}}
WHERE (SELECT count() FROM {{local "client_monthly"}}) = 0
GROUP BY mcp_id, month, client_name, client_version;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.client_monthly_mv TO {{local "client_monthly"}} AS
SELECT
    mcp_id,
    toStartOfMonth(ts) AS month,
    client_name,
    client_version,
    countState() AS calls,
    uniqHLL12State(session_id) AS sessions
FROM {{local "events"}}
GROUP BY mcp_id, month, client_name, client_version;
