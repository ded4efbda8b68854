-- The raw table: one row per accepted item. Day partitions (UTC) so that old
-- days are dropped whole (ALTER TABLE ... DROP PARTITION; 18.16 has no TTL)
-- and a read of a few days touches a few partitions. Sorted by MCP first:
-- every read and every rule value is about one MCP (or a list of them), so
-- the primary key skips the others; then by time, which rule windows and
-- start-up scans filter on.
--
-- ts has whole seconds (no DateTime64 on 18.16); ts_ms holds the
-- milliseconds within that second. duration_ms is 0 when has_duration is 0:
-- an absent duration is not a zero one. user_key is the user id, or the
-- session id for items without one, prefixed ("u:" / "s:") so that the two
-- never collide. ingest_node and ingest_seq name the write-ahead-log record
-- that carried the row, so that a replay after a crash can skip what a
-- previous run already inserted.
CREATE TABLE IF NOT EXISTS {{local "events"}}
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
ENGINE = {{engine "MergeTree"}}
PARTITION BY toDate(ts)
ORDER BY (mcp_id, ts);
-- On a cluster the rows live in events_local on each shard, and events is
-- the Distributed table over them that inserts and reads use, sharded by
-- MCP: each MCP's rows, and so its rollup rows, stay on one shard.
{{distributed "events" "cityHash64(mcp_id)"}}
