-- Shared dedup expiry without a per-row index (docs/exactly-once.md,
-- "Shared dedup"): the btree on ingest_claims.at cost every claim an
-- index insert (its entry, its WAL, its share of vacuum). Rows older than
-- the window count as absent already (a claim takes them over), so their
-- deletion only bounds the table's size: the instances sweep the table's
-- pages in order instead (TID range scans, a chunk of pages at a time),
-- one sweep every eighth of the window, their progress in
-- ingest_claims_sweep (one row): the next page to read and when the
-- sweep began (Unix nanoseconds).
DROP INDEX ingest_claims_at;
CREATE TABLE ingest_claims_sweep (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    next_block bigint  NOT NULL,
    started_at bigint  NOT NULL
);
INSERT INTO ingest_claims_sweep (next_block, started_at) VALUES (0, 0);
