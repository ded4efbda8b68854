-- The SLO, release and failure rollups fed from one per-insert aggregate
-- instead of every raw row (docs/ARCHITECTURE.md "Rollup shape",
-- docs/benchmarks.md "ClickHouse CPU and bytes per item").
--
-- slo_hourly and slo_daily (012), release_hourly (011) and failure_daily
-- (009) each read every inserted event: four GROUP BYs of each insert,
-- two t-digests and 32 conditional sums per event; together about a
-- quarter of an insert's ClickHouse CPU on 18.16 (measured with each
-- view dropped in turn). Their keys all fit one grain: the MCP, the hour,
-- the method, the name, the server version and the error kind. Here one
-- view (call_input_mv) aggregates each insert at that grain into
-- call_input, a Null table as in 008, building every state once per
-- event, and the four rollups' views merge those rows. The ladder's sums
-- are plain numbers (a sum of sums); the states the rollups keep
-- (release_hourly's and failure_daily's) are merged with -MergeState into
-- the same states, so the rollups keep their column types and their rows.
--
-- name is the item's name for tools/call items and error items, '' for
-- the other items (a resource's URI would multiply the rows): what
-- failure_daily keeps; the others take it for tools/call only, as before.
--
-- As in 008, each rollup has two views with the same SELECT, one reading
-- FROM call_input_mv (ClickHouse 18.16 runs it) and one FROM call_input
-- (later versions run it): on any server exactly one of them fires.
--
-- Existing installations: each old view is dropped and its new ones
-- created in the same run; an insert between the two statements would
-- miss that rollup: run `telemetryd migrate` with ingest stopped, as for
-- 008 and 013. Nothing is backfilled: the rollups keep their rows.
DROP TABLE IF EXISTS {{.DB}}.slo_hourly_mv;
DROP TABLE IF EXISTS {{.DB}}.slo_daily_mv;
DROP TABLE IF EXISTS {{.DB}}.release_hourly_mv;
DROP TABLE IF EXISTS {{.DB}}.failure_daily_mv;

CREATE TABLE IF NOT EXISTS {{local "call_input"}}
(
    mcp_id         String,
    hour           DateTime('UTC'),
    method         LowCardinality(String),
    name           String,
    server_version String,
    error_kind     LowCardinality(String),
    calls          AggregateFunction(count),
    errors         AggregateFunction(sum, UInt64),
    dur_n          AggregateFunction(sum, UInt64),
    dur_q          AggregateFunction(quantilesTDigestIf(0.95), Float64, UInt8),
    resp_q         AggregateFunction(quantilesTDigestIf(0.5, 0.95), Int64, UInt8),
    resp_max       AggregateFunction(max, Int64),
    first_seen     AggregateFunction(min, UInt64),
    last_seen      AggregateFunction(max, UInt64),
    le_50          UInt64,
    le_100         UInt64,
    le_200         UInt64,
    le_300         UInt64,
    le_500         UInt64,
    le_750         UInt64,
    le_1000        UInt64,
    le_1500        UInt64,
    le_2000        UInt64,
    le_3000        UInt64,
    le_5000        UInt64,
    le_10000       UInt64,
    le_30000       UInt64
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.call_input_mv TO {{local "call_input"}} AS
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    method,
    if(method = 'tools/call' OR error_kind != '', name, '') AS name,
    CAST(server_version AS String) AS server_version,
    error_kind,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    quantilesTDigestIfState(0.95)(duration_ms, has_duration) AS dur_q,
    quantilesTDigestIfState(0.5, 0.95)(response_bytes, toUInt8(response_bytes >= 0)) AS resp_q,
    maxState(response_bytes) AS resp_max,
    minState(toUInt64(ts) * 1000 + ts_ms) AS first_seen,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen,
    sum(has_duration AND duration_ms <= 50) AS le_50,
    sum(has_duration AND duration_ms <= 100) AS le_100,
    sum(has_duration AND duration_ms <= 200) AS le_200,
    sum(has_duration AND duration_ms <= 300) AS le_300,
    sum(has_duration AND duration_ms <= 500) AS le_500,
    sum(has_duration AND duration_ms <= 750) AS le_750,
    sum(has_duration AND duration_ms <= 1000) AS le_1000,
    sum(has_duration AND duration_ms <= 1500) AS le_1500,
    sum(has_duration AND duration_ms <= 2000) AS le_2000,
    sum(has_duration AND duration_ms <= 3000) AS le_3000,
    sum(has_duration AND duration_ms <= 5000) AS le_5000,
    sum(has_duration AND duration_ms <= 10000) AS le_10000,
    sum(has_duration AND duration_ms <= 30000) AS le_30000
FROM {{local "events"}}
GROUP BY mcp_id, hour, method, name, server_version, error_kind;

-- slo_hourly: 18.16 runs this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.slo_hourly_mv TO {{local "slo_hourly"}} AS
SELECT
    mcp_id,
    hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countMerge(calls) AS calls,
    sumMerge(errors) AS errors,
    sumMerge(dur_n) AS timed,
    sum(le_50) AS le_50,
    sum(le_100) AS le_100,
    sum(le_200) AS le_200,
    sum(le_300) AS le_300,
    sum(le_500) AS le_500,
    sum(le_750) AS le_750,
    sum(le_1000) AS le_1000,
    sum(le_1500) AS le_1500,
    sum(le_2000) AS le_2000,
    sum(le_3000) AS le_3000,
    sum(le_5000) AS le_5000,
    sum(le_10000) AS le_10000,
    sum(le_30000) AS le_30000
FROM {{.DB}}.call_input_mv
GROUP BY mcp_id, hour, tool, error_kind;

-- slo_hourly: later versions run this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.slo_hourly_chained_mv TO {{local "slo_hourly"}} AS
SELECT
    mcp_id,
    hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countMerge(calls) AS calls,
    sumMerge(errors) AS errors,
    sumMerge(dur_n) AS timed,
    sum(le_50) AS le_50,
    sum(le_100) AS le_100,
    sum(le_200) AS le_200,
    sum(le_300) AS le_300,
    sum(le_500) AS le_500,
    sum(le_750) AS le_750,
    sum(le_1000) AS le_1000,
    sum(le_1500) AS le_1500,
    sum(le_2000) AS le_2000,
    sum(le_3000) AS le_3000,
    sum(le_5000) AS le_5000,
    sum(le_10000) AS le_10000,
    sum(le_30000) AS le_30000
FROM {{local "call_input"}}
GROUP BY mcp_id, hour, tool, error_kind;

-- slo_daily: 18.16 runs this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.slo_daily_mv TO {{local "slo_daily"}} AS
SELECT
    mcp_id,
    toDate(hour) AS day,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countMerge(calls) AS calls,
    sumMerge(errors) AS errors,
    sumMerge(dur_n) AS timed,
    sum(le_50) AS le_50,
    sum(le_100) AS le_100,
    sum(le_200) AS le_200,
    sum(le_300) AS le_300,
    sum(le_500) AS le_500,
    sum(le_750) AS le_750,
    sum(le_1000) AS le_1000,
    sum(le_1500) AS le_1500,
    sum(le_2000) AS le_2000,
    sum(le_3000) AS le_3000,
    sum(le_5000) AS le_5000,
    sum(le_10000) AS le_10000,
    sum(le_30000) AS le_30000
FROM {{.DB}}.call_input_mv
GROUP BY mcp_id, day, tool, error_kind;

-- slo_daily: later versions run this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.slo_daily_chained_mv TO {{local "slo_daily"}} AS
SELECT
    mcp_id,
    toDate(hour) AS day,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countMerge(calls) AS calls,
    sumMerge(errors) AS errors,
    sumMerge(dur_n) AS timed,
    sum(le_50) AS le_50,
    sum(le_100) AS le_100,
    sum(le_200) AS le_200,
    sum(le_300) AS le_300,
    sum(le_500) AS le_500,
    sum(le_750) AS le_750,
    sum(le_1000) AS le_1000,
    sum(le_1500) AS le_1500,
    sum(le_2000) AS le_2000,
    sum(le_3000) AS le_3000,
    sum(le_5000) AS le_5000,
    sum(le_10000) AS le_10000,
    sum(le_30000) AS le_30000
FROM {{local "call_input"}}
GROUP BY mcp_id, day, tool, error_kind;

-- release_hourly: 18.16 runs this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.release_hourly_mv TO {{local "release_hourly"}} AS
SELECT
    mcp_id,
    server_version,
    hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    sumMergeState(dur_n) AS dur_n,
    quantilesTDigestIfMergeState(0.95)(dur_q) AS dur_q,
    minMergeState(first_seen) AS first_seen,
    maxMergeState(last_seen) AS last_seen
FROM {{.DB}}.call_input_mv
WHERE server_version != ''
GROUP BY mcp_id, server_version, hour, tool, error_kind;

-- release_hourly: later versions run this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.release_hourly_chained_mv TO {{local "release_hourly"}} AS
SELECT
    mcp_id,
    server_version,
    hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countMergeState(calls) AS calls,
    sumMergeState(errors) AS errors,
    sumMergeState(dur_n) AS dur_n,
    quantilesTDigestIfMergeState(0.95)(dur_q) AS dur_q,
    minMergeState(first_seen) AS first_seen,
    maxMergeState(last_seen) AS last_seen
FROM {{local "call_input"}}
WHERE server_version != ''
GROUP BY mcp_id, server_version, hour, tool, error_kind;

-- failure_daily: 18.16 runs this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.failure_daily_mv TO {{local "failure_daily"}} AS
SELECT
    mcp_id,
    toDate(hour) AS day,
    method,
    name,
    error_kind,
    countMergeState(calls) AS calls,
    quantilesTDigestIfMergeState(0.5, 0.95)(resp_q) AS resp_q,
    maxMergeState(resp_max) AS resp_max,
    maxMergeState(last_seen) AS last_seen
FROM {{.DB}}.call_input_mv
WHERE method = 'tools/call' OR error_kind != '' OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, method, name, error_kind;

-- failure_daily: later versions run this one.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.failure_daily_chained_mv TO {{local "failure_daily"}} AS
SELECT
    mcp_id,
    toDate(hour) AS day,
    method,
    name,
    error_kind,
    countMergeState(calls) AS calls,
    quantilesTDigestIfMergeState(0.5, 0.95)(resp_q) AS resp_q,
    maxMergeState(resp_max) AS resp_max,
    maxMergeState(last_seen) AS last_seen
FROM {{local "call_input"}}
WHERE method = 'tools/call' OR error_kind != '' OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, method, name, error_kind;
