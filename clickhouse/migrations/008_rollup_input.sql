-- The breakdown and protocol rollups fed from one per-insert aggregate
-- instead of every raw row (docs/analyst-reads.md "Rollups on insert",
-- docs/benchmarks.md, docs/operations.md "Upgrades").
--
-- Up to 006 breakdown_daily's view expanded every inserted event six times
-- (ARRAY JOIN) and built two uniqHLL12 states and a t-digest for each
-- copy: 42% of an insert's ClickHouse CPU on 18.16; protocol_daily's
-- built the same states per event under a six-column key. Here one view
-- (rollup_input_mv) aggregates each insert per MCP, day and combination of
-- the dimension values both need into rollup_input, building the states
-- once per event, and their views merge those rows (-MergeState). tool is
-- the item's name for tools/call items and '' for the others: only the
-- breakdown's tool dimension reads it, for tools/call only, and a
-- resource's URI would multiply the rows.
--
-- The other rollups stay on events: their keys are narrow, so their views
-- add each event to a handful of states, which costs less than merging
-- the input's states (a distinct-count state of more than 16 values is a
-- 4096-register sketch to merge, on every input row and every view;
-- measured in docs/benchmarks.md: feeding all ten state-building rollups
-- from an hourly input of this kind cost more CPU than 006 as soon as an
-- insert spans several MCPs).
--
-- rollup_input is a Null table: it stores nothing, it exists for the
-- views that read it. A view on a view's output fires differently by
-- version: ClickHouse 18.16 runs the views that read FROM the first view
-- (rollup_input_mv), later versions those that read FROM its target table
-- (rollup_input). So each of the two rollups has two views with the same
-- SELECT, one of each kind (name_mv and name_chained_mv); on any server
-- exactly one of them fires (checked on 18.16 by the read tests, on 26 by
-- the proof). The insert ledger (clickhouse/ledger.go) knows them for one
-- view of the rollup whose rows derive from events through
-- rollup_input_mv's SELECT.
--
-- Existing installations: each old view is dropped and its new ones
-- created in the same run; an insert between the two statements would
-- miss that rollup: run `telemetryd migrate` with ingest stopped, as for
-- 004 to 006. Nothing is backfilled: the rollups keep their rows, in the
-- same states.
CREATE TABLE IF NOT EXISTS {{local "rollup_input"}}
(
    mcp_id           String,
    day              Date,
    tool             String,
    method           String,
    client_name      String,
    client_version   String,
    server_version   String,
    protocol_version String,
    error_type       String,
    is_error         UInt8,
    calls            AggregateFunction(count),
    errors           AggregateFunction(sum, UInt64),
    sessions         AggregateFunction(uniqHLL12, String),
    users            AggregateFunction(uniqHLL12, String),
    dur_n            AggregateFunction(sum, UInt64),
    dur_sum          AggregateFunction(sum, Float64),
    dur_q            AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8)
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.rollup_input_mv TO {{local "rollup_input"}} AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    if(method = 'tools/call', name, '') AS tool,
    CAST(method AS String) AS method,
    CAST(client_name AS String) AS client_name,
    CAST(client_version AS String) AS client_version,
    CAST(server_version AS String) AS server_version,
    CAST(protocol_version AS String) AS protocol_version,
    CAST(error_type AS String) AS error_type,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
GROUP BY mcp_id, day, tool, method, client_name, client_version, server_version, protocol_version, error_type, is_error;

DROP TABLE IF EXISTS {{.DB}}.protocol_daily_mv;

-- protocol_daily (any method): 18.16 runs this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.protocol_daily_mv TO {{local "protocol_daily"}} AS
SELECT
    mcp_id,
    day,
    protocol_version,
    client_name,
    client_version,
    is_error,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    uniqHLL12MergeState(sessions) AS sessions,
    uniqHLL12MergeState(users) AS users,
    sumMergeState(dur_n) AS dur_n,
    sumMergeState(dur_sum) AS dur_sum,
    quantilesTDigestIfMergeState(0.5, 0.95, 0.99)(dur_q) AS dur_q
FROM {{.DB}}.rollup_input_mv
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

-- protocol_daily (any method): later versions run this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.protocol_daily_chained_mv TO {{local "protocol_daily"}} AS
SELECT
    mcp_id,
    day,
    protocol_version,
    client_name,
    client_version,
    is_error,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    uniqHLL12MergeState(sessions) AS sessions,
    uniqHLL12MergeState(users) AS users,
    sumMergeState(dur_n) AS dur_n,
    sumMergeState(dur_sum) AS dur_sum,
    quantilesTDigestIfMergeState(0.5, 0.95, 0.99)(dur_q) AS dur_q
FROM {{local "rollup_input"}}
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

DROP TABLE IF EXISTS {{.DB}}.breakdown_daily_mv;

-- breakdown_daily (one row per dimension value): 18.16 runs this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.breakdown_daily_mv TO {{local "breakdown_daily"}} AS
SELECT
    mcp_id,
    day,
    dim,
    dim_value,
    is_error,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    uniqHLL12MergeState(sessions) AS sessions,
    uniqHLL12MergeState(users) AS users,
    sumMergeState(dur_n) AS dur_n,
    sumMergeState(dur_sum) AS dur_sum,
    quantilesTDigestIfMergeState(0.5, 0.95, 0.99)(dur_q) AS dur_q
FROM {{.DB}}.rollup_input_mv
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

-- breakdown_daily (one row per dimension value): later versions run this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.breakdown_daily_chained_mv TO {{local "breakdown_daily"}} AS
SELECT
    mcp_id,
    day,
    dim,
    dim_value,
    is_error,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    uniqHLL12MergeState(sessions) AS sessions,
    uniqHLL12MergeState(users) AS users,
    sumMergeState(dur_n) AS dur_n,
    sumMergeState(dur_sum) AS dur_sum,
    quantilesTDigestIfMergeState(0.5, 0.95, 0.99)(dur_q) AS dur_q
FROM {{local "rollup_input"}}
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;
