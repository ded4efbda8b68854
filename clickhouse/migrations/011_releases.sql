-- Releases (docs/releases.md): per MCP, per server_version, per hour, per
-- tool and error kind, the figures a release comparison reads over
-- matched windows (the head's first hours of traffic against the base's
-- last hours before the head appeared) without reading events: calls,
-- errors, durations (count and a p95 t-digest) and the first and last
-- item's time in Unix milliseconds (when a release was first and last
-- seen, to the millisecond, not to the hour).
--
-- tool is the name of a tools/call item and "" for every other method,
-- so a release's totals sum every row and its tools read tool != "".
-- error_kind is "" for successes and for errors stored without a kind.
-- Items without server_version are not a release and are left out (the
-- insert ledger's markers, "~wal/...", carry server_version "~" and come
-- through, as they must). ORDER BY puts server_version before hour, so a
-- comparison reads two narrow ranges of one MCP's sorted rows.
CREATE TABLE IF NOT EXISTS {{local "release_hourly"}}
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
ENGINE = {{engine "AggregatingMergeTree"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (mcp_id, server_version, hour, tool, error_kind)
SETTINGS index_granularity = 256;
{{distributed "release_hourly"}}

-- Existing installations: the items stored before this migration, once
-- (the table is empty only on the first run). An insert between this
-- statement and the view's creation would miss the rollup: run
-- `telemetryd migrate` with ingest stopped, as for 004 to 009.
INSERT INTO {{local "release_hourly"}} (mcp_id, server_version, hour, tool, error_kind, calls, errors, dur_n, dur_q, first_seen, last_seen)
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
FROM {{local "events"}}
WHERE server_version != '' AND (SELECT count() FROM {{local "release_hourly"}}) = 0
GROUP BY mcp_id, server_version, hour, tool, error_kind;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.release_hourly_mv TO {{local "release_hourly"}} AS
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
FROM {{local "events"}}
WHERE server_version != ''
GROUP BY mcp_id, server_version, hour, tool, error_kind;
