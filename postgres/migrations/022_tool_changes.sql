-- 022: tool changes graded (docs/tool-changes.md). tool_definitions keeps
-- each distinct definition of an MCP's tools once, by the SHA-256 of its
-- canonical JSON (those of listed tools and at most 1,000 others per
-- MCP, the oldest dropped first); inventory_tools remembers its tool's current one, and each
-- change the definitions before and after it, its severity and reasons.
-- rules gain min_severity, the filter of tool_changes rules.
CREATE TABLE tool_definitions (
    mcp_id        text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    hash          text NOT NULL,
    definition    jsonb NOT NULL,
    first_seen_at timestamptz NOT NULL,
    PRIMARY KEY (mcp_id, hash)
);
CREATE INDEX tool_definitions_age_idx ON tool_definitions (mcp_id, first_seen_at);

ALTER TABLE inventory_tools ADD COLUMN definition_hash text;

ALTER TABLE inventory_changes
    ADD COLUMN before_definition text,
    ADD COLUMN after_definition  text,
    ADD COLUMN severity          text CHECK (severity IN ('breaking', 'risky', 'benign')),
    ADD COLUMN reasons           jsonb;

ALTER TABLE rules ADD COLUMN min_severity text CHECK (min_severity IN ('breaking', 'risky', 'benign'));
