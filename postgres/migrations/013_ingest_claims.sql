-- Shared dedup claims (docs/exactly-once.md, "Shared dedup"): one row per
-- item id accepted in the duplicate window, keyed by a 128-bit hash of the
-- MCP and the id (md5 of "<octet length of mcp_id>:<mcp_id><id>", as a
-- uuid: 16 bytes, collisions negligible), owned by the log record that
-- holds the item: node, a 64-bit hash of the instance's node id and log
-- identity; at, the record's receipt in Unix nanoseconds (unique per
-- node). An instance claims a payload's ids in a transaction it commits
-- only once its log holds the payload; the flusher stores only the items
-- its records own. Rows older than the window count as absent and are
-- deleted in the background (the at index).
CREATE TABLE ingest_claims (
    h    uuid   PRIMARY KEY,
    node bigint NOT NULL,
    at   bigint NOT NULL
);
CREATE INDEX ingest_claims_at ON ingest_claims (at);
-- The ids the previous protocol confirmed carry over, owned by node 0 at
-- their receipt (microseconds, as it stored them): a replayed record of
-- that receipt owns them (a record confirmed and not flushed before the
-- upgrade). Pending reservations do not: their payloads are either in a
-- log (the replay claims them) or were never accepted.
INSERT INTO ingest_claims (h, node, at)
SELECT md5(octet_length(mcp_id)::text || ':' || mcp_id || id)::uuid, 0,
       (extract(epoch FROM received_at) * 1000000)::bigint * 1000
FROM ingest_ids WHERE pending_until IS NULL
ON CONFLICT (h) DO NOTHING;
DROP TABLE ingest_ids;
