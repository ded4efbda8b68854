-- 016: derived sessions keep the most recently used (docs/sessions.md).
-- used: per session (parallel to starts and lasts), when an item was last
-- placed in it, which decides the 16 kept; rows written before this have
-- none, and their sessions count as used at their latest item. used_at:
-- when the identity last had an item placed, for expiring identities idle
-- longer than the retention (existing rows: their latest item).
ALTER TABLE auto_sessions
    ADD COLUMN used    timestamptz[] NOT NULL DEFAULT '{}',
    ADD COLUMN used_at timestamptz   NOT NULL DEFAULT now();

UPDATE auto_sessions SET used_at = COALESCE((SELECT max(l) FROM unnest(lasts) AS l), used_at);

CREATE INDEX auto_sessions_used_at ON auto_sessions (used_at);
