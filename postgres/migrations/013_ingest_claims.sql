-- Shared dedup claims (docs/exactly-once.md, "Shared dedup"): one row per
-- item id accepted in the duplicate window, keyed by a 128-bit hash of the
-- MCP and the id (md5 of "<octet length of mcp_id>:<mcp_id><id>", as a
-- uuid: 16 bytes, collisions negligible), owned by the log record that
-- holds the item (node: a 64-bit hash of the instance's node id and log
-- identity; seq: the record's sequence number). An instance appends a
-- payload to its log first, then claims its ids in one statement; the
-- flusher stores only the items its records own. Rows older than the
-- window count as absent and are deleted in the background.
CREATE TABLE ingest_claims (
    h           uuid        PRIMARY KEY,
    received_at timestamptz NOT NULL,
    node        bigint      NOT NULL,
    seq         bigint      NOT NULL
);
CREATE INDEX ingest_claims_received_at ON ingest_claims (received_at);
-- The ids the previous protocol confirmed carry over, owned by node 0: a
-- replayed record of the same receipt time owns them (a record confirmed
-- and not flushed before the upgrade). Pending reservations do not: their
-- payloads are either in a log (the replay claims them) or were never
-- accepted.
INSERT INTO ingest_claims (h, received_at, node, seq)
SELECT md5(octet_length(mcp_id)::text || ':' || mcp_id || id)::uuid, received_at, 0, 0
FROM ingest_ids WHERE pending_until IS NULL
ON CONFLICT (h) DO NOTHING;
DROP TABLE ingest_ids;
