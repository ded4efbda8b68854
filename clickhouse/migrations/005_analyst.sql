-- Analyst reads (docs/analyst-reads.md): session timelines, breakdowns, hourly series.
--
-- Existing installations: each table is created, then backfilled (from a
-- rollup where one holds the same states, from events otherwise) only
-- while it is empty, and only then is its view created, as in 004: run
-- `telemetryd migrate` once, with ingest stopped, before starting the new
-- version. The backfills from events read every stored event once (about
-- 10 s per 50M events on 2 cores). On a fresh install they read nothing.

-- Per MCP per session: first and last item time (Unix milliseconds). A
-- session timeline looks its session up here by primary key, then reads
-- only the events between those two instants. No partitions: one small row
-- per session, merged by key.
CREATE TABLE IF NOT EXISTS {{local "session_span"}}
(
    mcp_id     String,
    session_id String,
    started    AggregateFunction(min, UInt64),
    last_seen  AggregateFunction(max, UInt64)
)
ENGINE = {{engine "AggregatingMergeTree"}}
ORDER BY (mcp_id, session_id)
SETTINGS index_granularity = 256;
{{distributed "session_span"}}

INSERT INTO {{local "session_span"}} (mcp_id, session_id, started, last_seen)
SELECT mcp_id, session_id, minMergeState(started) AS started, maxMergeState(last_seen) AS last_seen
FROM {{local "session_daily"}}
WHERE (SELECT count() FROM {{local "session_span"}}) = 0
GROUP BY mcp_id, session_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.session_span_mv TO {{local "session_span"}} AS
SELECT
    mcp_id,
    session_id,
    minState(toUInt64(ts) * 1000 + ts_ms) AS started,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM {{local "events"}}
GROUP BY mcp_id, session_id;

-- Per MCP per day per dimension value, any method: the breakdowns by
-- tool, method, client_name, client_version, server_version and
-- error_type (unfiltered, or filtered by status through is_error). The
-- views expand each item into one row per dimension it has (ARRAY JOIN of
-- two parallel arrays): tool for tools/call items only, error_type for
-- errors only. Keying each dimension separately keeps the rows per day to
-- the dimensions' own cardinalities (a key of all of them together grew
-- with their product: nearly one row per event on varied data). No
-- monthly table: a breakdown reads one dimension's rows, a few per value
-- and day, so a year merges thousands of states, not millions; and every
-- rollup view is paid on every insert (measured on 18.16: per
-- (filter, dimension) pairs and monthly copies made inserts 15 times
-- slower). Filters other than status scan raw events (see Breakdown).
CREATE TABLE IF NOT EXISTS {{local "breakdown_daily"}}
(
    mcp_id    String,
    day       Date,
    dim       String,
    dim_value String,
    is_error  UInt8,
    calls     AggregateFunction(count),
    errors    AggregateFunction(sum, UInt64),
    sessions  AggregateFunction(uniqHLL12, String),
    users     AggregateFunction(uniqHLL12, String),
    dur_n     AggregateFunction(sum, UInt64),
    dur_sum   AggregateFunction(sum, Float64),
    dur_q     AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, dim, day, dim_value, is_error)
SETTINGS index_granularity = 256;
{{distributed "breakdown_daily"}}

INSERT INTO {{local "breakdown_daily"}} (mcp_id, day, dim, dim_value, is_error, calls, errors, sessions, users, dur_n, dur_sum, dur_q)
SELECT
    mcp_id,
    toDate(ts) AS day,
    dim,
    dim_value,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [name, CAST(method AS String), CAST(client_name AS String), CAST(client_version AS String), CAST(server_version AS String), CAST(error_type AS String)] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
    AND (SELECT count() FROM {{local "breakdown_daily"}}) = 0
GROUP BY mcp_id, day, dim, dim_value, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.breakdown_daily_mv TO {{local "breakdown_daily"}} AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    dim,
    dim_value,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [name, CAST(method AS String), CAST(client_name AS String), CAST(client_version AS String), CAST(server_version AS String), CAST(error_type AS String)] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

-- Per MCP per hour, any method: the overview's hourly series (ranges of
-- at most 14 days). Same states as mcp_daily.
CREATE TABLE IF NOT EXISTS {{local "mcp_hourly"}}
(
    mcp_id   String,
    hour     DateTime('UTC'),
    calls    AggregateFunction(count),
    errors   AggregateFunction(sum, UInt64),
    sessions AggregateFunction(uniqHLL12, String),
    users    AggregateFunction(uniqHLL12, String),
    dur_n    AggregateFunction(sum, UInt64),
    dur_sum  AggregateFunction(sum, Float64),
    dur_q    AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, hour)
SETTINGS index_granularity = 256;
{{distributed "mcp_hourly"}}

INSERT INTO {{local "mcp_hourly"}} (mcp_id, hour, calls, errors, sessions, users, dur_n, dur_sum, dur_q)
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
WHERE (SELECT count() FROM {{local "mcp_hourly"}}) = 0
GROUP BY mcp_id, hour;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.mcp_hourly_mv TO {{local "mcp_hourly"}} AS
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
GROUP BY mcp_id, hour;

-- Per MCP per hour per tool, tools/call only: the tool detail's hourly
-- series.
CREATE TABLE IF NOT EXISTS {{local "tool_hourly"}}
(
    mcp_id  String,
    hour    DateTime('UTC'),
    name    String,
    calls   AggregateFunction(count),
    errors  AggregateFunction(sum, UInt64),
    dur_n   AggregateFunction(sum, UInt64),
    dur_sum AggregateFunction(sum, Float64),
    dur_q   AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, name, hour)
SETTINGS index_granularity = 256;
{{distributed "tool_hourly"}}

INSERT INTO {{local "tool_hourly"}} (mcp_id, hour, name, calls, errors, dur_n, dur_sum, dur_q)
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    name,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
WHERE method = 'tools/call' AND (SELECT count() FROM {{local "tool_hourly"}}) = 0
GROUP BY mcp_id, hour, name;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.tool_hourly_mv TO {{local "tool_hourly"}} AS
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    name,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
WHERE method = 'tools/call'
GROUP BY mcp_id, hour, name;
