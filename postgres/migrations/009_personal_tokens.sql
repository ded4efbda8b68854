-- 009: personal access tokens (docs/mcp-endpoint.md). A token reads as its
-- person in the account it was made in; stored only as its SHA-256, like
-- session tokens, and checked on every request like them (so a deleted
-- token is refused at once). Leaving the account stops it (the
-- membership join), deleting the person or the account removes it.
CREATE TABLE personal_tokens (
    id           text PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,
    user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text NOT NULL,
    scope        text NOT NULL CHECK (scope IN ('read')),
    hint         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);
CREATE INDEX personal_tokens_owner_idx ON personal_tokens (account_id, user_id, created_at);
