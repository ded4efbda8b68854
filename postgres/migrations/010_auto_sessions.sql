-- 010: sessions for items sent without a session_id (docs/sessions.md).
-- Per MCP and identity (the user id, else the client name and version;
-- stored as its SHA-256, so no user id is kept here), its latest derived
-- sessions (first and latest item of each, parallel arrays, oldest first,
-- at most 16), shared by every instance; gone with its MCP. And each
-- MCP's idle timeout (minutes, default 30).
CREATE TABLE auto_sessions (
    mcp_id   text          NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    identity text          NOT NULL,
    starts   timestamptz[] NOT NULL DEFAULT '{}',
    lasts    timestamptz[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (mcp_id, identity)
);

ALTER TABLE mcps ADD COLUMN session_idle_minutes integer NOT NULL DEFAULT 30
    CHECK (session_idle_minutes BETWEEN 1 AND 1440);
