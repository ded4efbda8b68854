-- Nightly figures, one row per MCP per day computed. A re-run of a day
-- writes rows with a higher version; ReplacingMergeTree drops the older
-- ones eventually, and readers take argMax(..., version) meanwhile (FINAL
-- would cost far more). retention_7d is meaningful only when has_retention.
CREATE TABLE IF NOT EXISTS {{local "nightly"}}
(
    mcp_id           String,
    day              Date,
    active_users_28d UInt64,
    stickiness       Float64,
    retention_7d     Float64,
    has_retention    UInt8,
    version          UInt64
)
ENGINE = {{engine "ReplacingMergeTree" "version"}}
PARTITION BY toYYYYMM(day)
ORDER BY (mcp_id, day)
SETTINGS index_granularity = 256;
{{distributed "nightly" "cityHash64(mcp_id)"}}

-- One row per completed pass. An MCP without a row for the last pass had no
-- users in its window: its figures are zero, not stale.
CREATE TABLE IF NOT EXISTS {{local "nightly_runs"}}
(
    day     Date,
    mcps    UInt64,
    version UInt64
)
ENGINE = {{engine "ReplacingMergeTree" "version"}}
ORDER BY day;
{{distributed "nightly_runs" "toUInt32(day)"}}
