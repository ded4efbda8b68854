-- Rollups: AggregatingMergeTree tables fed by materialized views on events,
-- so every insert into events (the flusher's batches, the seeder's INSERT
-- SELECT) updates them in the same statement. Each view aggregates its
-- insert block; background merges combine rows with the same key
-- eventually, so every read GROUPs BY and uses -Merge. Sorted by
-- (mcp_id, day, ...) because every read is one MCP over a day range; small
-- index_granularity because their rows are few and fat (on 18.16 the
-- default 8192 made a rollup read slower than the raw scan). Monthly
-- partitions keep the part count low while allowing old months to be
-- dropped. "at" below is the item time in Unix milliseconds.
--
-- On a cluster each shard's views read its events_local into its local
-- rollups (name_local), and reads merge the states of every shard through
-- the Distributed rollups.

-- Per MCP per day, any method: the overview.
CREATE TABLE IF NOT EXISTS {{local "mcp_daily"}}
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
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day)
SETTINGS index_granularity = 256;
{{distributed "mcp_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.mcp_daily_mv TO {{local "mcp_daily"}} AS
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
FROM {{local "events"}}
GROUP BY mcp_id, day;

-- Per MCP per day per tool, tools/call only: the tool reads and insights.
CREATE TABLE IF NOT EXISTS {{local "tool_daily"}}
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
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, name)
SETTINGS index_granularity = 256;
{{distributed "tool_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.tool_daily_mv TO {{local "tool_daily"}} AS
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
FROM {{local "events"}}
WHERE method = 'tools/call'
GROUP BY mcp_id, day, name;

-- Per MCP per day per session: the sessions list. Keyed by day so that a
-- range reads only its days; the first client and user of a session are
-- the argMin over item time among items that carry one.
CREATE TABLE IF NOT EXISTS {{local "session_daily"}}
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
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, session_id)
SETTINGS index_granularity = 256;
{{distributed "session_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.session_daily_mv TO {{local "session_daily"}} AS
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
FROM {{local "events"}}
GROUP BY mcp_id, day, session_id;

-- Per MCP per day per (method, name, error type), error items only: the
-- tool's error types and the insights' top errors.
CREATE TABLE IF NOT EXISTS {{local "error_daily"}}
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
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, method, name, error_type)
SETTINGS index_granularity = 256;
{{distributed "error_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.error_daily_mv TO {{local "error_daily"}} AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    method,
    name,
    error_type,
    countState() AS errors,
    argMaxState(error_message, toUInt64(ts) * 1000 + ts_ms) AS last_message,
    maxState(toUInt64(ts) * 1000 + ts_ms) AS last_seen
FROM {{local "events"}}
WHERE is_error = 1
GROUP BY mcp_id, day, method, name, error_type;

-- Per MCP per day per client (name, version), any method: the insights'
-- client shares. No method or name in the key: resource URIs are
-- unbounded, and a distinct-count state per (client, version, name) would multiply
-- the rows to merge. The uniqHLL12 states merge into distinct sessions.
CREATE TABLE IF NOT EXISTS {{local "client_daily"}}
(
    mcp_id         String,
    day            Date,
    client_name    LowCardinality(String),
    client_version LowCardinality(String),
    calls          AggregateFunction(count),
    sessions       AggregateFunction(uniqHLL12, String)
)
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, client_name, client_version)
SETTINGS index_granularity = 256;
{{distributed "client_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.client_daily_mv TO {{local "client_daily"}} AS
SELECT
    mcp_id,
    toDate(ts) AS day,
    client_name,
    client_version,
    countState() AS calls,
    uniqHLL12State(session_id) AS sessions
FROM {{local "events"}}
GROUP BY mcp_id, day, client_name, client_version;

-- Per MCP per day per tool per client name, tools/call only: the tool's
-- clients. Plain counts, summed on merge; readers still GROUP BY.
CREATE TABLE IF NOT EXISTS {{local "tool_client_daily"}}
(
    mcp_id      String,
    day         Date,
    name        String,
    client_name LowCardinality(String),
    calls       UInt64
)
ENGINE = {{engine "SummingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, name, client_name)
SETTINGS index_granularity = 256;
{{distributed "tool_client_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.tool_client_daily_mv TO {{local "tool_client_daily"}} AS
SELECT mcp_id, toDate(ts) AS day, name, client_name, count() AS calls
FROM {{local "events"}}
WHERE method = 'tools/call'
GROUP BY mcp_id, day, name, client_name;

-- Per MCP per day per user: the exact user sets of the nightly pass
-- (distinct users, days active per user, retention cohorts). Plain rows
-- summed on merge; readers still GROUP BY.
CREATE TABLE IF NOT EXISTS {{local "user_daily"}}
(
    mcp_id   String,
    day      Date,
    user_key String,
    calls    UInt64
)
ENGINE = {{engine "SummingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, user_key)
SETTINGS index_granularity = 256;
{{distributed "user_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.user_daily_mv TO {{local "user_daily"}} AS
SELECT mcp_id, toDate(ts) AS day, user_key, count() AS calls
FROM {{local "events"}}
GROUP BY mcp_id, day, user_key;

-- Per account per day of acceptance per MCP: account usage. By
-- received_at, not ts: usage meters the day the service did the work.
CREATE TABLE IF NOT EXISTS {{local "usage_daily"}}
(
    account_id String,
    day        Date,
    mcp_id     String,
    events     UInt64
)
ENGINE = {{engine "SummingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (account_id, day, mcp_id)
SETTINGS index_granularity = 256;
{{distributed "usage_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.usage_daily_mv TO {{local "usage_daily"}} AS
SELECT account_id, toDate(received_at) AS day, mcp_id, count() AS events
FROM {{local "events"}}
GROUP BY account_id, day, mcp_id;
