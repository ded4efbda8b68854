-- Service level indicators (docs/slos.md): per MCP per hour (slo_hourly)
-- and per day (slo_daily), per tool (tools/call items; "" for every other
-- method) and error kind ("" on success, and on errors stored before error
-- kinds existed), plain counts summed on merge (readers still GROUP BY):
--
--   calls   the items;
--   errors  the error items (an availability SLO's bad items are the
--           errors of its error_kinds, so the kinds are in the key);
--   timed   the items with a duration (a latency SLO's items);
--   le_T    the timed items that took at most T ms, for every T of the
--           latency ladder (analytics.LatencyLadderMs: a latency SLO's
--           threshold_ms is one of them, so its good items are le_T).
--
-- An SLO's window is whole days: the pass reads the whole days of it from
-- slo_daily and the hours at its two ends from slo_hourly, a few dozen rows
-- per MCP and key whatever the window (one rollup row per MCP, key and
-- kind a day instead of 24). Both are fed from events by their own view
-- (like mcp_daily and mcp_hourly) and backfilled from events once, while
-- empty, before the view exists (as in 005: run `telemetryd migrate` with
-- ingest stopped). Plain UInt64 columns rather than states: the sums read
-- the same on 18.16 and later servers and merge for free.

CREATE TABLE IF NOT EXISTS {{local "slo_hourly"}}
(
    mcp_id     String,
    hour       DateTime('UTC'),
    tool       String,
    error_kind LowCardinality(String),
    calls      UInt64,
    errors     UInt64,
    timed      UInt64,
    le_50      UInt64,
    le_100     UInt64,
    le_200     UInt64,
    le_300     UInt64,
    le_500     UInt64,
    le_750     UInt64,
    le_1000    UInt64,
    le_1500    UInt64,
    le_2000    UInt64,
    le_3000    UInt64,
    le_5000    UInt64,
    le_10000   UInt64,
    le_30000   UInt64
)
ENGINE = {{engine "SummingMergeTree"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, hour, tool, error_kind)
SETTINGS index_granularity = 256;
{{distributed "slo_hourly"}}

INSERT INTO {{local "slo_hourly"}} (mcp_id, hour, tool, error_kind, calls, errors, timed, le_50, le_100, le_200, le_300, le_500, le_750, le_1000, le_1500, le_2000, le_3000, le_5000, le_10000, le_30000)
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    count() AS calls,
    sum(toUInt64(is_error)) AS errors,
    sum(toUInt64(has_duration)) AS timed,
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
WHERE (SELECT count() FROM {{local "slo_hourly"}}) = 0
GROUP BY mcp_id, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.slo_hourly_mv TO {{local "slo_hourly"}} AS
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    count() AS calls,
    sum(toUInt64(is_error)) AS errors,
    sum(toUInt64(has_duration)) AS timed,
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
GROUP BY mcp_id, hour, tool, error_kind;

CREATE TABLE IF NOT EXISTS {{local "slo_daily"}}
(
    mcp_id     String,
    day        Date,
    tool       String,
    error_kind LowCardinality(String),
    calls      UInt64,
    errors     UInt64,
    timed      UInt64,
    le_50      UInt64,
    le_100     UInt64,
    le_200     UInt64,
    le_300     UInt64,
    le_500     UInt64,
    le_750     UInt64,
    le_1000    UInt64,
    le_1500    UInt64,
    le_2000    UInt64,
    le_3000    UInt64,
    le_5000    UInt64,
    le_10000   UInt64,
    le_30000   UInt64
)
ENGINE = {{engine "SummingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, tool, error_kind)
SETTINGS index_granularity = 256;
{{distributed "slo_daily"}}

INSERT INTO {{local "slo_daily"}} (mcp_id, day, tool, error_kind, calls, errors, timed, le_50, le_100, le_200, le_300, le_500, le_750, le_1000, le_1500, le_2000, le_3000, le_5000, le_10000, le_30000)
SELECT
    mcp_id,
    toDate(ts) AS day,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    count() AS calls,
    sum(toUInt64(is_error)) AS errors,
    sum(toUInt64(has_duration)) AS timed,
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
WHERE (SELECT count() FROM {{local "slo_daily"}}) = 0
GROUP BY mcp_id, day, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.slo_daily_mv TO {{local "slo_daily"}} AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    count() AS calls,
    sum(toUInt64(is_error)) AS errors,
    sum(toUInt64(has_duration)) AS timed,
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
GROUP BY mcp_id, day, tool, error_kind;
