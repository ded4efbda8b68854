-- 011: the tool inventory (docs/inventory.md). inventory_tools is each
-- MCP's tools as the reports showed them: first and last sighting, latest
-- schema hash (and schema, when the report carried it), and whether the
-- last report still listed it. inventory_changes is the history: every
-- added, removed or changed tool with the report's time and server
-- version; added and changed rows carry the new hash, so the hash history
-- of a tool is its rows here.
CREATE TABLE inventory_tools (
    mcp_id        text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    name          text NOT NULL,
    schema_hash   text NOT NULL,
    schema        jsonb,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    present       boolean NOT NULL DEFAULT true,
    PRIMARY KEY (mcp_id, name)
);

CREATE TABLE inventory_changes (
    id             bigserial PRIMARY KEY,
    mcp_id         text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    at             timestamptz NOT NULL,
    tool           text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('added', 'removed', 'changed')),
    server_version text,
    schema_hash    text
);
CREATE INDEX inventory_changes_mcp_at_idx ON inventory_changes (mcp_id, at);

-- Rule metrics are validated by the service (alerting.RuleCreate); the
-- column only keeps their shape, so adding a metric (tool_changes here)
-- needs no migration.
ALTER TABLE rules DROP CONSTRAINT rules_metric_check;
ALTER TABLE rules ADD CONSTRAINT rules_metric_check CHECK (metric ~ '^[a-z0-9_]{1,64}$');
