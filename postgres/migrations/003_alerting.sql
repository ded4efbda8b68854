-- 003: alerting. Each person's channel switches per account, the team-chat
-- webhooks, alert rules and the deliveries a firing rule fans out to (which
-- are also the inbox). IDs are opaque prefixed random strings made in Go
-- (rul_, dlv_).

-- A person without a row hears on every personal channel (opt-out), so rows
-- exist only for people who changed a switch. Leaving the account removes
-- them with the membership.
CREATE TABLE channel_preferences (
    account_id text NOT NULL,
    user_id    text NOT NULL,
    in_app     boolean NOT NULL DEFAULT true,
    email      boolean NOT NULL DEFAULT true,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, user_id),
    FOREIGN KEY (account_id, user_id) REFERENCES memberships (account_id, user_id) ON DELETE CASCADE
);

-- One incoming webhook per team-chat channel and account. The URL is a
-- bearer credential: only its AES-GCM ciphertext is stored (sealed in Go
-- with a key from configuration, bound to account and channel), with the
-- masked hint that reads show.
CREATE TABLE webhook_connections (
    account_id     text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    channel        text NOT NULL CHECK (channel IN ('slack', 'discord')),
    url_ciphertext bytea NOT NULL,
    hint           text NOT NULL,
    created_by     text REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, channel)
);

-- Alert rules. account_id is copied from the MCP at creation (MCPs never
-- change account), so tenant checks need no join. Deleting the MCP removes
-- its rules; their deliveries stay.
CREATE TABLE rules (
    id             text PRIMARY KEY,
    account_id     text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mcp_id         text NOT NULL REFERENCES mcps (id) ON DELETE CASCADE,
    name           text NOT NULL,
    metric         text NOT NULL CHECK (metric IN ('error_rate', 'errors', 'calls', 'p95_ms')),
    tool           text,
    comparator     text NOT NULL CHECK (comparator IN ('>', '>=', '<', '<=')),
    threshold      double precision NOT NULL,
    window_minutes integer NOT NULL CHECK (window_minutes BETWEEN 1 AND 1440),
    channels       text[] NOT NULL,
    enabled        boolean NOT NULL DEFAULT true,
    state          text NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'firing')),
    last_fired_at  timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rules_mcp_idx ON rules (mcp_id, created_at, id);
CREATE INDEX rules_account_idx ON rules (account_id);
-- The evaluator loads every enabled rule each pass.
CREATE INDEX rules_enabled_idx ON rules (window_minutes, mcp_id) WHERE enabled;

-- One row per rule firing, channel and recipient: the delivery log of the
-- admins and, for in_app rows, each person's inbox. Rows are written when a
-- rule fires and never rewritten by later membership, rule or MCP changes,
-- so rule_id and mcp_id carry no foreign key and rule_name keeps the name
-- the rule had when it fired. recipient_user_id is null for team-chat rows.
--
-- Only in_app rows are 'delivered'; the others are 'queued' and nothing
-- sends them yet. The last five columns are for the sender to come: it
-- claims due rows with
--   UPDATE deliveries SET claimed_at = now(), attempts = attempts + 1
--   WHERE id IN (SELECT id FROM deliveries WHERE status = 'queued'
--     AND next_attempt_at <= now() ORDER BY next_attempt_at
--     LIMIT n FOR UPDATE SKIP LOCKED) RETURNING ...
-- and records sent_at, or last_error and a later next_attempt_at.
CREATE TABLE deliveries (
    id                text PRIMARY KEY,
    account_id        text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    rule_id           text NOT NULL,
    rule_name         text NOT NULL,
    mcp_id            text NOT NULL,
    channel           text NOT NULL CHECK (channel IN ('in_app', 'email', 'slack', 'discord')),
    recipient_user_id text REFERENCES users (id) ON DELETE CASCADE,
    status            text NOT NULL CHECK (status IN ('delivered', 'queued')),
    title             text NOT NULL,
    body              text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    read_at           timestamptz,
    attempts          integer NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    claimed_at        timestamptz,
    sent_at           timestamptz,
    last_error        text,
    CHECK ((recipient_user_id IS NULL) = (channel IN ('slack', 'discord')))
);
-- The sender's claim query.
CREATE INDEX deliveries_queued_idx ON deliveries (next_attempt_at) WHERE status = 'queued';
-- A person's inbox, newest first, and its unread count.
CREATE INDEX deliveries_inbox_idx ON deliveries (recipient_user_id, account_id, created_at DESC, id DESC)
    WHERE channel = 'in_app';
CREATE INDEX deliveries_unread_idx ON deliveries (recipient_user_id, account_id)
    WHERE channel = 'in_app' AND read_at IS NULL;
-- The admins' delivery log, newest first.
CREATE INDEX deliveries_account_idx ON deliveries (account_id, created_at DESC, id DESC);
