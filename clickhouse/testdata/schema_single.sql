-- telemetry schema, database telemetry, single server.
-- On ClickHouse 18.x, run with SET allow_experimental_low_cardinality_type = 1.
-- Every statement is idempotent; telemetryd migrate records the versions it applies.
-- ClickHouse 18.x does not parse ADD COLUMN IF NOT EXISTS: there, run such an ALTER without
-- IF NOT EXISTS where the column is missing (telemetryd migrate does).

CREATE DATABASE IF NOT EXISTS telemetry;

CREATE TABLE IF NOT EXISTS telemetry.schema_migrations
(
    version    UInt32,
    name       String,
    applied_at DateTime('UTC')
)
ENGINE = MergeTree() ORDER BY version;

-- 001_events.sql
CREATE TABLE IF NOT EXISTS telemetry.events
(
    account_id     String,
    mcp_id         String,
    ts             DateTime('UTC'),
    ts_ms          UInt16,
    received_at    DateTime('UTC'),
    id             String,
    session_id     String,
    method         LowCardinality(String),
    name           String,
    is_error       UInt8,
    error_type     LowCardinality(String),
    error_message  String,
    duration_ms    Float64,
    has_duration   UInt8,
    client_name    LowCardinality(String),
    client_version LowCardinality(String),
    server_version LowCardinality(String),
    user_id        String,
    user_key       String,
    attr_keys      Array(String),
    attr_values    Array(String),
    ingest_node    LowCardinality(String),
    ingest_seq     UInt64
)
ENGINE = MergeTree()
PARTITION BY toDate(ts)
ORDER BY (mcp_id, ts);

-- 002_rollups.sql
CREATE TABLE IF NOT EXISTS telemetry.mcp_daily
(
    mcp_id   String,
    day      Date,
    calls    AggregateFunction(count),
    errors   AggregateFunction(sum, UInt64),
    sessions AggregateFunction(uniqHLL12, String),
    users    AggregateFunction(uniqHLL12, String),
    dur_n    AggregateFunction(sum, UInt64),
    dur_sum  AggregateFunction(sum, Float64),
    dur_q    AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.mcp_daily_mv TO telemetry.mcp_daily AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM telemetry.events
GROUP BY mcp_id, day;

CREATE TABLE IF NOT EXISTS telemetry.tool_daily
(
    mcp_id    String,
    day       Date,
    name      String,
    calls     AggregateFunction(count),
    errors    AggregateFunction(sum, UInt64),
    sessions  AggregateFunction(uniqHLL12, String),
    dur_n     AggregateFunction(sum, UInt64),
    dur_sum   AggregateFunction(sum, Float64),
    dur_q     AggregateFunction(quantilesTDigestIf(0.5, 0.95, 0.99), Float64, UInt8),
    last_seen AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, name)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.tool_daily_mv TO telemetry.tool_daily AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    name,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
WHERE method = 'tools/call'
GROUP BY mcp_id, day, name;

CREATE TABLE IF NOT EXISTS telemetry.session_daily
(
    mcp_id               String,
    day                  Date,
    session_id           String,
    started              AggregateFunction(min, UInt64),
    last_seen            AggregateFunction(max, UInt64),
    calls                AggregateFunction(count),
    errors               AggregateFunction(sum, UInt64),
    first_client_name    AggregateFunction(argMinIf, String, UInt64, UInt8),
    first_client_version AggregateFunction(argMinIf, String, UInt64, UInt8),
    first_user_id        AggregateFunction(argMinIf, String, UInt64, UInt8)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, session_id)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.session_daily_mv TO telemetry.session_daily AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    session_id,
    minState(toUInt64(ts) * 1000 + ts_ms) AS started,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    argMinIfState(CAST(client_name AS String), toUInt64(ts) * 1000 + ts_ms, client_name != '') AS first_client_name,
    argMinIfState(CAST(client_version AS String), toUInt64(ts) * 1000 + ts_ms, client_name != '') AS first_client_version,
    argMinIfState(user_id, toUInt64(ts) * 1000 + ts_ms, user_id != '') AS first_user_id
FROM telemetry.events
GROUP BY mcp_id, day, session_id;

CREATE TABLE IF NOT EXISTS telemetry.error_daily
(
    mcp_id       String,
    day          Date,
    method       LowCardinality(String),
    name         String,
    error_type   LowCardinality(String),
    errors       AggregateFunction(count),
    last_message AggregateFunction(argMax, String, UInt64),
    last_seen    AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, method, name, error_type)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.error_daily_mv TO telemetry.error_daily AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    method,
    name,
    error_type,
    countState() AS errors,
    argMaxState(error_message, toUInt64(ts) * 1000 + ts_ms) AS last_message,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
WHERE is_error = 1
GROUP BY mcp_id, day, method, name, error_type;

CREATE TABLE IF NOT EXISTS telemetry.client_daily
(
    mcp_id         String,
    day            Date,
    client_name    LowCardinality(String),
    client_version LowCardinality(String),
    calls          AggregateFunction(count),
    sessions       AggregateFunction(uniqHLL12, String)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, client_name, client_version)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.client_daily_mv TO telemetry.client_daily AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    client_name,
    client_version,
    countState() AS calls,
    uniqHLL12State(session_id) AS sessions
FROM telemetry.events
GROUP BY mcp_id, day, client_name, client_version;

CREATE TABLE IF NOT EXISTS telemetry.tool_client_daily
(
    mcp_id      String,
    day         Date,
    name        String,
    client_name LowCardinality(String),
    calls       UInt64
)
ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, name, client_name)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.tool_client_daily_mv TO telemetry.tool_client_daily AS
SELECT mcp_id, toDate(ts) AS day, name, client_name, count() AS calls
FROM telemetry.events
WHERE method = 'tools/call'
GROUP BY mcp_id, day, name, client_name;

CREATE TABLE IF NOT EXISTS telemetry.user_daily
(
    mcp_id   String,
    day      Date,
    user_key String,
    calls    UInt64
)
ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, user_key)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.user_daily_mv TO telemetry.user_daily AS
SELECT mcp_id, toDate(ts) AS day, user_key, count() AS calls
FROM telemetry.events
GROUP BY mcp_id, day, user_key;

CREATE TABLE IF NOT EXISTS telemetry.usage_daily
(
    account_id String,
    day        Date,
    mcp_id     String,
    events     UInt64
)
ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (account_id, day, mcp_id)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.usage_daily_mv TO telemetry.usage_daily AS
SELECT account_id, toDate(received_at) AS day, mcp_id, count() AS events
FROM telemetry.events
GROUP BY account_id, day, mcp_id;

-- 003_nightly.sql
CREATE TABLE IF NOT EXISTS telemetry.nightly
(
    mcp_id           String,
    day              Date,
    active_users_28d UInt64,
    stickiness       Float64,
    retention_7d     Float64,
    has_retention    UInt8,
    version          UInt64
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day)
SETTINGS index_granularity = 256;

CREATE TABLE IF NOT EXISTS telemetry.nightly_runs
(
    day     Date,
    mcps    UInt64,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY day;

-- 004_monthly.sql
CREATE TABLE IF NOT EXISTS telemetry.tool_monthly
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
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(month)
ORDER BY (mcp_id, month, name)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.tool_monthly (mcp_id, month, name, calls, errors, sessions, dur_n, dur_sum, dur_q, last_seen)
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
FROM telemetry.tool_daily
WHERE (SELECT count() FROM telemetry.tool_monthly) = 0
GROUP BY mcp_id, month, name;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.tool_monthly_mv TO telemetry.tool_monthly AS
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
FROM telemetry.events
WHERE method = 'tools/call'
GROUP BY mcp_id, month, name;

CREATE TABLE IF NOT EXISTS telemetry.error_monthly
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
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(month)
ORDER BY (mcp_id, month, method, name, error_type)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.error_monthly (mcp_id, month, method, name, error_type, errors, last_message, last_seen)
SELECT
    mcp_id,
    toStartOfMonth(day) AS month,
    method,
    name,
    error_type,
    countMergeState(errors) AS errors,
    argMaxMergeState(last_message) AS last_message,
    maxMergeState(last_seen) AS last_seen
FROM telemetry.error_daily
WHERE (SELECT count() FROM telemetry.error_monthly) = 0
GROUP BY mcp_id, month, method, name, error_type;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.error_monthly_mv TO telemetry.error_monthly AS
SELECT
    mcp_id,
    toStartOfMonth(ts) AS month,
    method,
    name,
    error_type,
    countState() AS errors,
    argMaxState(error_message, toUInt64(ts) * 1000 + ts_ms) AS last_message,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
WHERE is_error = 1
GROUP BY mcp_id, month, method, name, error_type;

CREATE TABLE IF NOT EXISTS telemetry.client_monthly
(
    mcp_id         String,
    month          Date,
    client_name    LowCardinality(String),
    client_version LowCardinality(String),
    calls          AggregateFunction(count),
    sessions       AggregateFunction(uniqHLL12, String)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(month)
ORDER BY (mcp_id, month, client_name, client_version)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.client_monthly (mcp_id, month, client_name, client_version, calls, sessions)
SELECT
    mcp_id,
    toStartOfMonth(day) AS month,
    client_name,
    client_version,
    countMergeState(calls) AS calls,
    uniqHLL12MergeState(sessions) AS sessions
FROM telemetry.client_daily
WHERE (SELECT count() FROM telemetry.client_monthly) = 0
GROUP BY mcp_id, month, client_name, client_version;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.client_monthly_mv TO telemetry.client_monthly AS
SELECT
    mcp_id,
    toStartOfMonth(ts) AS month,
    client_name,
    client_version,
    countState() AS calls,
    uniqHLL12State(session_id) AS sessions
FROM telemetry.events
GROUP BY mcp_id, month, client_name, client_version;

-- 005_analyst.sql
CREATE TABLE IF NOT EXISTS telemetry.session_span
(
    mcp_id     String,
    session_id String,
    started    AggregateFunction(min, UInt64),
    last_seen  AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree()
ORDER BY (mcp_id, session_id)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.session_span (mcp_id, session_id, started, last_seen)
SELECT mcp_id, session_id, minMergeState(started) AS started, maxMergeState(last_seen) AS last_seen
FROM telemetry.session_daily
WHERE (SELECT count() FROM telemetry.session_span) = 0
GROUP BY mcp_id, session_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.session_span_mv TO telemetry.session_span AS
SELECT
    mcp_id,
    session_id,
    minState(toUInt64(ts) * 1000 + ts_ms) AS started,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
GROUP BY mcp_id, session_id;

CREATE TABLE IF NOT EXISTS telemetry.breakdown_daily
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
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, dim, day, dim_value, is_error)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.breakdown_daily (mcp_id, day, dim, dim_value, is_error, calls, errors, sessions, users, dur_n, dur_sum, dur_q)
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
FROM telemetry.events
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [name, CAST(method AS String), CAST(client_name AS String), CAST(client_version AS String), CAST(server_version AS String), CAST(error_type AS String)] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
    AND (SELECT count() FROM telemetry.breakdown_daily) = 0
GROUP BY mcp_id, day, dim, dim_value, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.breakdown_daily_mv TO telemetry.breakdown_daily AS
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
FROM telemetry.events
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [name, CAST(method AS String), CAST(client_name AS String), CAST(client_version AS String), CAST(server_version AS String), CAST(error_type AS String)] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

CREATE TABLE IF NOT EXISTS telemetry.mcp_hourly
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
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, hour)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.mcp_hourly (mcp_id, hour, calls, errors, sessions, users, dur_n, dur_sum, dur_q)
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
FROM telemetry.events
WHERE (SELECT count() FROM telemetry.mcp_hourly) = 0
GROUP BY mcp_id, hour;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.mcp_hourly_mv TO telemetry.mcp_hourly AS
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
FROM telemetry.events
GROUP BY mcp_id, hour;

CREATE TABLE IF NOT EXISTS telemetry.tool_hourly
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
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, name, hour)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.tool_hourly (mcp_id, hour, name, calls, errors, dur_n, dur_sum, dur_q)
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    name,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM telemetry.events
WHERE method = 'tools/call' AND (SELECT count() FROM telemetry.tool_hourly) = 0
GROUP BY mcp_id, hour, name;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.tool_hourly_mv TO telemetry.tool_hourly AS
SELECT
    mcp_id,
    toStartOfHour(ts) AS hour,
    name,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM telemetry.events
WHERE method = 'tools/call'
GROUP BY mcp_id, hour, name;

-- 006_protocol.sql
ALTER TABLE telemetry.events ADD COLUMN IF NOT EXISTS protocol_version LowCardinality(String) AFTER server_version;

CREATE TABLE IF NOT EXISTS telemetry.protocol_daily
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
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, protocol_version, client_name, client_version, is_error)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.protocol_daily (mcp_id, day, protocol_version, client_name, client_version, is_error, calls, errors, sessions, users, dur_n, dur_sum, dur_q)
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
FROM telemetry.events
WHERE (SELECT count() FROM telemetry.protocol_daily) = 0
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.protocol_daily_mv TO telemetry.protocol_daily AS
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
FROM telemetry.events
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

-- 007_event_ids.sql
CREATE TABLE IF NOT EXISTS telemetry.event_ids
(
    mcp_id      String,
    id_hash     UInt64,
    id_hash2    UInt32,
    received_at DateTime('UTC')
)
ENGINE = MergeTree()
PARTITION BY toDate(received_at)
ORDER BY (mcp_id, id_hash)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.event_ids (mcp_id, id_hash, id_hash2, received_at)
SELECT mcp_id, cityHash64(id) AS id_hash, toUInt32(cityHash64(reverse(id))) AS id_hash2, received_at
FROM telemetry.events
WHERE ts >= now() - INTERVAL 32 DAY AND received_at >= now() - INTERVAL 25 HOUR AND id != ''
  AND (SELECT count() FROM telemetry.event_ids) = 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.event_ids_mv TO telemetry.event_ids AS
SELECT mcp_id, cityHash64(id) AS id_hash, toUInt32(cityHash64(reverse(id))) AS id_hash2, received_at
FROM telemetry.events
WHERE id != '' OR substring(mcp_id, 1, 5) = '~wal/';

-- 008_rollup_input.sql
CREATE TABLE IF NOT EXISTS telemetry.rollup_input
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

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.rollup_input_mv TO telemetry.rollup_input AS
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
FROM telemetry.events
GROUP BY mcp_id, day, tool, method, client_name, client_version, server_version, protocol_version, error_type, is_error;

DROP TABLE IF EXISTS telemetry.protocol_daily_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.protocol_daily_mv TO telemetry.protocol_daily AS
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
FROM telemetry.rollup_input_mv
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.protocol_daily_chained_mv TO telemetry.protocol_daily AS
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
FROM telemetry.rollup_input
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

DROP TABLE IF EXISTS telemetry.breakdown_daily_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.breakdown_daily_mv TO telemetry.breakdown_daily AS
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
FROM telemetry.rollup_input_mv
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.breakdown_daily_chained_mv TO telemetry.breakdown_daily AS
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
FROM telemetry.rollup_input
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim != 'error_type' OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

-- 009_failures.sql
ALTER TABLE telemetry.events ADD COLUMN IF NOT EXISTS error_kind LowCardinality(String) AFTER error_type;

ALTER TABLE telemetry.events ADD COLUMN IF NOT EXISTS response_bytes Int64 DEFAULT -1 AFTER has_duration;

ALTER TABLE telemetry.events ADD COLUMN IF NOT EXISTS args_hash String AFTER response_bytes;

CREATE TABLE IF NOT EXISTS telemetry.failure_daily
(
    mcp_id     String,
    day        Date,
    method     LowCardinality(String),
    name       String,
    error_kind LowCardinality(String),
    calls      AggregateFunction(count),
    resp_q     AggregateFunction(quantilesTDigestIf(0.5, 0.95), Int64, UInt8),
    resp_max   AggregateFunction(max, Int64),
    last_seen  AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, method, name, error_kind)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.failure_daily_mv TO telemetry.failure_daily AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    method,
    name,
    error_kind,
    countState() AS calls,
    quantilesTDigestIfState(0.5, 0.95)(response_bytes, toUInt8(response_bytes >= 0)) AS resp_q,
    maxState(response_bytes) AS resp_max,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
WHERE method = 'tools/call' OR error_kind != '' OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, method, name, error_kind;

CREATE TABLE IF NOT EXISTS telemetry.refusal_daily
(
    mcp_id  String,
    day     Date,
    name    String,
    message String,
    calls   UInt64
)
ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, name, message)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.refusal_daily_mv TO telemetry.refusal_daily AS
SELECT mcp_id, toDate(ts) AS day, name, error_message AS message, count() AS calls
FROM telemetry.events
WHERE (method = 'tools/call' AND error_kind = 'invalid_params') OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, name, message;

DROP TABLE IF EXISTS telemetry.breakdown_daily_mv;

DROP TABLE IF EXISTS telemetry.breakdown_daily_chained_mv;

DROP TABLE IF EXISTS telemetry.protocol_daily_mv;

DROP TABLE IF EXISTS telemetry.protocol_daily_chained_mv;

DROP TABLE IF EXISTS telemetry.rollup_input_mv;

DROP TABLE IF EXISTS telemetry.rollup_input;

CREATE TABLE IF NOT EXISTS telemetry.rollup_input
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
    error_kind       String,
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

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.rollup_input_mv TO telemetry.rollup_input AS
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
    CAST(error_kind AS String) AS error_kind,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM telemetry.events
GROUP BY mcp_id, day, tool, method, client_name, client_version, server_version, protocol_version, error_type, error_kind, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.protocol_daily_mv TO telemetry.protocol_daily AS
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
FROM telemetry.rollup_input_mv
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.protocol_daily_chained_mv TO telemetry.protocol_daily AS
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
FROM telemetry.rollup_input
GROUP BY mcp_id, day, protocol_version, client_name, client_version, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.breakdown_daily_mv TO telemetry.breakdown_daily AS
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
FROM telemetry.rollup_input_mv
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type', 'error_kind'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type, error_kind] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim NOT IN ('error_type', 'error_kind') OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.breakdown_daily_chained_mv TO telemetry.breakdown_daily AS
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
FROM telemetry.rollup_input
ARRAY JOIN
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type', 'error_kind'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type, error_kind] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim NOT IN ('error_type', 'error_kind') OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;

-- 010_probes.sql
CREATE TABLE IF NOT EXISTS telemetry.probe_results
(
    account_id       String,
    mcp_id           String,
    probe_id         String,
    at               DateTime('UTC'),
    at_ms            UInt16,
    is_up            UInt8,
    latency_ms       Float64,
    error            String,
    error_kind       LowCardinality(String),
    protocol_version LowCardinality(String),
    schema_hash      String
)
ENGINE = MergeTree()
PARTITION BY toDate(at)
ORDER BY (mcp_id, probe_id, at);

-- 011_releases.sql
CREATE TABLE IF NOT EXISTS telemetry.release_hourly
(
    mcp_id         String,
    server_version String,
    hour           DateTime('UTC'),
    tool           String,
    error_kind     LowCardinality(String),
    calls          AggregateFunction(count),
    errors         AggregateFunction(sum, UInt64),
    dur_n          AggregateFunction(sum, UInt64),
    dur_q          AggregateFunction(quantilesTDigestIf(0.95), Float64, UInt8),
    first_seen     AggregateFunction(min, UInt64),
    last_seen      AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, server_version, hour, tool, error_kind)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.release_hourly (mcp_id, server_version, hour, tool, error_kind, calls, errors, dur_n, dur_q, first_seen, last_seen)
SELECT
    mcp_id,
    CAST(server_version AS String) AS server_version,
    toStartOfHour(ts) AS hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    quantilesTDigestIfState(0.95)(duration_ms, has_duration) AS dur_q,
    minState(toUInt64(ts) * 1000 + ts_ms) AS first_seen,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
WHERE server_version != '' AND (SELECT count() FROM telemetry.release_hourly) = 0
GROUP BY mcp_id, server_version, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.release_hourly_mv TO telemetry.release_hourly AS
SELECT
    mcp_id,
    CAST(server_version AS String) AS server_version,
    toStartOfHour(ts) AS hour,
    if(method = 'tools/call', name, '') AS tool,
    error_kind,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    sumState(toUInt64(has_duration)) AS dur_n,
    quantilesTDigestIfState(0.95)(duration_ms, has_duration) AS dur_q,
    minState(toUInt64(ts) * 1000 + ts_ms) AS first_seen,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM telemetry.events
WHERE server_version != ''
GROUP BY mcp_id, server_version, hour, tool, error_kind;

-- 012_slo_rollups.sql
CREATE TABLE IF NOT EXISTS telemetry.slo_hourly
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
ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, hour, tool, error_kind)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.slo_hourly (mcp_id, hour, tool, error_kind, calls, errors, timed, le_50, le_100, le_200, le_300, le_500, le_750, le_1000, le_1500, le_2000, le_3000, le_5000, le_10000, le_30000)
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
FROM telemetry.events
WHERE (SELECT count() FROM telemetry.slo_hourly) = 0
GROUP BY mcp_id, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.slo_hourly_mv TO telemetry.slo_hourly AS
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
FROM telemetry.events
GROUP BY mcp_id, hour, tool, error_kind;

CREATE TABLE IF NOT EXISTS telemetry.slo_daily
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
ENGINE = SummingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, tool, error_kind)
SETTINGS index_granularity = 256;

INSERT INTO telemetry.slo_daily (mcp_id, day, tool, error_kind, calls, errors, timed, le_50, le_100, le_200, le_300, le_500, le_750, le_1000, le_1500, le_2000, le_3000, le_5000, le_10000, le_30000)
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
FROM telemetry.events
WHERE (SELECT count() FROM telemetry.slo_daily) = 0
GROUP BY mcp_id, day, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.slo_daily_mv TO telemetry.slo_daily AS
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
FROM telemetry.events
GROUP BY mcp_id, day, tool, error_kind;

-- 013_compact_ids.sql
ALTER TABLE telemetry.events ADD COLUMN IF NOT EXISTS id_uuid UUID AFTER id;

DROP TABLE IF EXISTS telemetry.event_ids_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.event_ids_mv TO telemetry.event_ids AS
SELECT
    mcp_id,
    cityHash64(if(id_uuid = toUUID('00000000-0000-0000-0000-000000000000'), id, toString(id_uuid))) AS id_hash,
    toUInt32(cityHash64(reverse(if(id_uuid = toUUID('00000000-0000-0000-0000-000000000000'), id, toString(id_uuid))))) AS id_hash2,
    received_at
FROM telemetry.events
WHERE id != '' OR id_uuid != toUUID('00000000-0000-0000-0000-000000000000') OR substring(mcp_id, 1, 5) = '~wal/';

-- 014_call_input.sql
DROP TABLE IF EXISTS telemetry.slo_hourly_mv;

DROP TABLE IF EXISTS telemetry.slo_daily_mv;

DROP TABLE IF EXISTS telemetry.release_hourly_mv;

DROP TABLE IF EXISTS telemetry.failure_daily_mv;

CREATE TABLE IF NOT EXISTS telemetry.call_input
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

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.call_input_mv TO telemetry.call_input AS
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
FROM telemetry.events
GROUP BY mcp_id, hour, method, name, server_version, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.slo_hourly_mv TO telemetry.slo_hourly AS
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
FROM telemetry.call_input_mv
GROUP BY mcp_id, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.slo_hourly_chained_mv TO telemetry.slo_hourly AS
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
FROM telemetry.call_input
GROUP BY mcp_id, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.slo_daily_mv TO telemetry.slo_daily AS
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
FROM telemetry.call_input_mv
GROUP BY mcp_id, day, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.slo_daily_chained_mv TO telemetry.slo_daily AS
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
FROM telemetry.call_input
GROUP BY mcp_id, day, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.release_hourly_mv TO telemetry.release_hourly AS
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
FROM telemetry.call_input_mv
WHERE server_version != ''
GROUP BY mcp_id, server_version, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.release_hourly_chained_mv TO telemetry.release_hourly AS
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
FROM telemetry.call_input
WHERE server_version != ''
GROUP BY mcp_id, server_version, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.failure_daily_mv TO telemetry.failure_daily AS
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
FROM telemetry.call_input_mv
WHERE method = 'tools/call' OR error_kind != '' OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, method, name, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS telemetry.failure_daily_chained_mv TO telemetry.failure_daily AS
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
FROM telemetry.call_input
WHERE method = 'tools/call' OR error_kind != '' OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, method, name, error_kind;

