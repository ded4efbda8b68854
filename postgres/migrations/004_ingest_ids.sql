-- The item ids accepted in the duplicate window (24 h), shared by every
-- instance when ingest.shared_dedup is on: a retry that a load balancer
-- sends to another instance is still dropped. Rows older than the window
-- are deleted in the background (received_at index) and count as absent
-- until then.
CREATE TABLE ingest_ids (
    mcp_id      text        NOT NULL,
    id          text        NOT NULL,
    received_at timestamptz NOT NULL,
    PRIMARY KEY (mcp_id, id)
);
CREATE INDEX ingest_ids_received_at ON ingest_ids (received_at);
