-- A reservation is not an acceptance: an instance reserves a payload's ids
-- as pending (pending_until set) before it writes them to its log, and
-- confirms them (pending_until NULL) once the log has them on disk. A
-- pending reservation whose holder died before its log write expires at
-- pending_until, and the client's retry, on any instance, takes it over.
-- Rows written before this column existed are confirmed.
ALTER TABLE ingest_ids ADD COLUMN IF NOT EXISTS pending_until timestamptz;
