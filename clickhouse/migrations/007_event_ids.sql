-- The duplicate filter's check (docs/exactly-once.md, "Bounded memory"):
-- before the flusher stores an item whose id the in-memory filter may have
-- seen, it asks which of those ids an MCP already holds from the window.
-- Asking events means reading the MCP's ids of the whole window (events is
-- sorted by MCP and time, not by id), a cost that grows with the MCP's
-- volume and would stall every tenant's flushes. This table holds two
-- hashes of each item id (64 + 32 bits: a false match needs both to
-- collide within one MCP's window), sorted by MCP and the first, so a
-- lookup of a batch's ids reads the few granules holding those hashes.
-- Day partitions by receipt, cut by retention like events.
CREATE TABLE IF NOT EXISTS {{local "event_ids"}}
(
    mcp_id      String,
    id_hash     UInt64,
    id_hash2    UInt32,
    received_at DateTime('UTC')
)
ENGINE = {{engine "MergeTree"}}
PARTITION BY toDate(received_at)
ORDER BY (mcp_id, id_hash)
SETTINGS index_granularity = 256;
{{distributed "event_ids" "cityHash64(mcp_id)"}}

-- The ids received in the last 25 hours before this migration, once, while
-- the table is empty, before the view exists (as in 005: run `telemetryd
-- migrate` with ingest stopped). Items are at most 30 days old when
-- received, which bounds the partitions read.
INSERT INTO {{local "event_ids"}} (mcp_id, id_hash, id_hash2, received_at)
SELECT mcp_id, cityHash64(id) AS id_hash, toUInt32(cityHash64(reverse(id))) AS id_hash2, received_at
FROM {{local "events"}}
WHERE ts >= now() - INTERVAL 32 DAY AND received_at >= now() - INTERVAL 25 HOUR AND id != ''
  AND (SELECT count() FROM {{local "event_ids"}}) = 0;

-- Items without an id are not checked; the insert ledger's markers
-- (MCP ids starting "~wal/", ledger.go) pass, as into every rollup.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.event_ids_mv TO {{local "event_ids"}} AS
SELECT mcp_id, cityHash64(id) AS id_hash, toUInt32(cityHash64(reverse(id))) AS id_hash2, received_at
FROM {{local "events"}}
WHERE id != '' OR substring(mcp_id, 1, 5) = '~wal/';
