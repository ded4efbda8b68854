-- Why agents fail (docs/failures.md): every item may carry error_kind (why
-- an error item failed, one of the contract's kinds; "" on success),
-- response_bytes (the serialized result's size; -1 when the item did not
-- say: a sentinel rather than Nullable, so the column stays a plain Int64
-- that quantile and max states read without unwrapping, on 18.16 as on
-- later servers) and args_hash (the SDK's keyed hash of the call's
-- canonical arguments, at most 128 characters; "" when absent).
--
-- Repeats (the same tool and args_hash as the session's previous call) are
-- computed at read time over the session's calls in order (clickhouse/
-- failures.go): a flag computed at ingest would depend on which service
-- instance saw which batch first, and late or reordered batches would
-- make it wrong for good.
--
-- Added to existing installations by ALTER (see 006 for how 18.16 runs
-- ADD COLUMN IF NOT EXISTS).
ALTER TABLE {{local "events"}} ADD COLUMN IF NOT EXISTS error_kind LowCardinality(String) AFTER error_type;
{{alterDistributed "events" "ADD COLUMN IF NOT EXISTS error_kind LowCardinality(String) AFTER error_type"}}
ALTER TABLE {{local "events"}} ADD COLUMN IF NOT EXISTS response_bytes Int64 DEFAULT -1 AFTER has_duration;
{{alterDistributed "events" "ADD COLUMN IF NOT EXISTS response_bytes Int64 DEFAULT -1 AFTER has_duration"}}
ALTER TABLE {{local "events"}} ADD COLUMN IF NOT EXISTS args_hash String AFTER response_bytes;
{{alterDistributed "events" "ADD COLUMN IF NOT EXISTS args_hash String AFTER response_bytes"}}

-- Per MCP per day per (method, name, error kind): tools/call items (any
-- outcome; error_kind "" for successes) and error items of other methods
-- (their names are resource URIs and prompt names, bounded here by the
-- errors). The tool detail's error_kinds and answer sizes, the tool list's
-- answer sizes, the overview's error kinds and unknown_tool_calls read it.
-- The size states skip items without response_bytes (-1). No monthly
-- copy: a read merges one row per tool, kind and day.
CREATE TABLE IF NOT EXISTS {{local "failure_daily"}}
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
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, method, name, error_kind)
SETTINGS index_granularity = 256;
{{distributed "failure_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.failure_daily_mv TO {{local "failure_daily"}} AS
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
FROM {{local "events"}}
WHERE method = 'tools/call' OR error_kind != '' OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, method, name, error_kind;

-- Per MCP per day per tool per refusal message, invalid_params tool calls
-- only: the tool page's most frequent refusals (the SDKs send the
-- validation message, never the values; the message is cut to 1024
-- characters at ingest like every error message).
CREATE TABLE IF NOT EXISTS {{local "refusal_daily"}}
(
    mcp_id  String,
    day     Date,
    name    String,
    message String,
    calls   UInt64
)
ENGINE = {{engine "SummingMergeTree"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day, name, message)
SETTINGS index_granularity = 256;
{{distributed "refusal_daily"}}

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.refusal_daily_mv TO {{local "refusal_daily"}} AS
SELECT mcp_id, toDate(ts) AS day, name, error_message AS message, count() AS calls
FROM {{local "events"}}
WHERE (method = 'tools/call' AND error_kind = 'invalid_params') OR substring(mcp_id, 1, 5) = '~wal/'
GROUP BY mcp_id, day, name, message;

-- The breakdown by error_kind: rollup_input (008) gains error_kind, and
-- breakdown_daily a seventh dimension, error_kind (error items only, like
-- error_type). rollup_input is a Null table and its views are dropped and
-- created again with the new shape (no rows are lost from the rollups:
-- they keep theirs; an insert between the drops and the creates would
-- miss breakdown_daily and protocol_daily: run `telemetryd migrate` with
-- ingest stopped, as for 004 to 008). Error items stored before this
-- migration have error_kind "": the breakdown shows them under "".
DROP TABLE IF EXISTS {{.DB}}.breakdown_daily_mv;
DROP TABLE IF EXISTS {{.DB}}.breakdown_daily_chained_mv;
DROP TABLE IF EXISTS {{.DB}}.protocol_daily_mv;
DROP TABLE IF EXISTS {{.DB}}.protocol_daily_chained_mv;
DROP TABLE IF EXISTS {{.DB}}.rollup_input_mv;
DROP TABLE IF EXISTS {{local "rollup_input"}};

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
    CAST(error_kind AS String) AS error_kind,
    is_error,
    countState() AS calls,
    sumState(toUInt64(is_error)) AS errors,
    uniqHLL12State(session_id) AS sessions,
    uniqHLL12State(user_key) AS users,
    sumState(toUInt64(has_duration)) AS dur_n,
    sumState(duration_ms) AS dur_sum,
    quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS dur_q
FROM {{local "events"}}
GROUP BY mcp_id, day, tool, method, client_name, client_version, server_version, protocol_version, error_type, error_kind, is_error;

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
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type', 'error_kind'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type, error_kind] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim NOT IN ('error_type', 'error_kind') OR is_error = 1)
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
    ['tool', 'method', 'client_name', 'client_version', 'server_version', 'error_type', 'error_kind'] AS dim,
    [tool, method, client_name, client_version, server_version, error_type, error_kind] AS dim_value
WHERE (dim != 'tool' OR method = 'tools/call') AND (dim NOT IN ('error_type', 'error_kind') OR is_error = 1)
GROUP BY mcp_id, day, dim, dim_value, is_error;
