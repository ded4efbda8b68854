-- Item ids in 16 bytes (docs/capacity.md, docs/benchmarks.md "ClickHouse
-- CPU and bytes per item"). Up to 012 events.id held every id as a
-- String: a UUID (what the SDKs and the Go client make) took 37 bytes a
-- row that LZ4 cannot shrink, 37 of the 60.8 bytes of an events row.
-- From here an id written exactly as toString(UUID) writes it back
-- (lower-case, dashed, not all zeros) is stored in id_uuid, with "" in id;
-- any other id is stored in id as before, with the zero UUID in id_uuid.
-- Reads take the item id as clickhouse.EventID:
--   if(id_uuid = toUUID('00000000-0000-0000-0000-000000000000'), id, toString(id_uuid))
-- which also reads every row stored before this migration (id_uuid is
-- then the zero UUID): nothing is rewritten, old parts keep their ids.
--
-- Added to existing installations by ALTER (see 006 for how 18.16 runs
-- ADD COLUMN IF NOT EXISTS).
ALTER TABLE {{local "events"}} ADD COLUMN IF NOT EXISTS id_uuid UUID AFTER id;
{{alterDistributed "events" "ADD COLUMN IF NOT EXISTS id_uuid UUID AFTER id"}}

-- The duplicate check's hashes (007) are of the id as the item carried
-- it, so its view hashes EventID. The view is dropped and created again
-- in the same run: an insert between the two statements would miss
-- event_ids (its items would then not be found by a later duplicate
-- check): run `telemetryd migrate` with ingest stopped, as for 008.
DROP TABLE IF EXISTS {{.DB}}.event_ids_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {{.DB}}.event_ids_mv TO {{local "event_ids"}} AS
SELECT
    mcp_id,
    cityHash64(if(id_uuid = toUUID('00000000-0000-0000-0000-000000000000'), id, toString(id_uuid))) AS id_hash,
    toUInt32(cityHash64(reverse(if(id_uuid = toUUID('00000000-0000-0000-0000-000000000000'), id, toString(id_uuid))))) AS id_hash2,
    received_at
FROM {{local "events"}}
WHERE id != '' OR id_uuid != toUUID('00000000-0000-0000-0000-000000000000') OR substring(mcp_id, 1, 5) = '~wal/';
