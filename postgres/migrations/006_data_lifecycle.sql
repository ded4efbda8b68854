-- 006: data lifecycle (docs/data-lifecycle.md). Server-side redaction per MCP (off by
-- default: strings stay exactly as sent), the account's own retention
-- (null: the installation's storage.retention_days), and the requests to
-- delete telemetry that a background worker carries out in ClickHouse: one
-- person's items of an MCP (kind 'user') or all of a deleted MCP's (kind
-- 'mcp'; the MCP row is gone by then, hence no foreign key on mcp_id).
ALTER TABLE mcps
    ADD COLUMN redaction_enabled  boolean NOT NULL DEFAULT false,
    ADD COLUMN redaction_patterns text[]  NOT NULL DEFAULT '{}';

ALTER TABLE accounts ADD COLUMN retention_days integer;

CREATE TABLE data_deletions (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mcp_id       text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('user', 'mcp')),
    user_id      text,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed')),
    error        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz
);
CREATE INDEX data_deletions_pending_idx ON data_deletions (created_at) WHERE status IN ('pending', 'running');
CREATE INDEX data_deletions_account_idx ON data_deletions (account_id, created_at);
