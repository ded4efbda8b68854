-- 002: people, accounts, memberships, sessions, invitations, the company
-- record, MCPs and ingest keys. IDs are opaque prefixed random strings made
-- in Go (usr_, acc_, mcp_, key_, inv_, ses_). Secrets (session tokens, invite
-- tokens, ingest keys) are stored only as their SHA-256.

CREATE TABLE users (
    id            text PRIMARY KEY,
    email         text NOT NULL,               -- exactly as sent
    email_key     text NOT NULL UNIQUE,        -- lower-cased, for lookups and uniqueness
    name          text NOT NULL,
    password_hash text NOT NULL,               -- argon2id, PHC string
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE accounts (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    plan       text NOT NULL DEFAULT 'free',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    joined_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE sessions (
    id         text PRIMARY KEY,
    token_hash bytea NOT NULL UNIQUE,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX sessions_user_account_idx ON sessions (user_id, account_id);

CREATE TABLE invitations (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email       text NOT NULL,                 -- exactly as sent
    email_key   text NOT NULL,                 -- lower-cased
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    token_hash  bytea NOT NULL UNIQUE,
    created_by  text REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz
);
-- At most one pending invitation per person and account: inviting again
-- replaces it (a lost token is recovered by inviting again).
CREATE UNIQUE INDEX invitations_pending_idx ON invitations (account_id, email_key) WHERE accepted_at IS NULL;

CREATE TABLE companies (
    account_id    text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    legal_name    text,
    website       text,
    billing_email text,
    address       text,
    vat_id        text
);

CREATE TABLE mcps (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcps_account_idx ON mcps (account_id, created_at);

CREATE TABLE ingest_keys (
    id           text PRIMARY KEY,
    mcp_id       text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE,
    hint         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);
CREATE INDEX ingest_keys_mcp_idx ON ingest_keys (mcp_id, created_at);

-- Every instance caches ingest key lookups for a moment; a deleted key
-- (directly or through its MCP's cascade) is announced so that each cache
-- evicts it at once. The payload is the hex SHA-256 of the key. NOTIFY is
-- delivered at commit, so a rolled-back delete announces nothing.
CREATE FUNCTION notify_ingest_key_revoked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ingest_key_revoked', encode(OLD.key_hash, 'hex'));
    RETURN OLD;
END
$$;

CREATE TRIGGER ingest_keys_revoked AFTER DELETE ON ingest_keys
    FOR EACH ROW EXECUTE FUNCTION notify_ingest_key_revoked();
