-- 019: destinations from the registry of integrations, rule severity.
--
-- The channel ids were a CHECK constraint (slack, discord; in_app, email,
-- slack, discord); they now follow the registry of integrations in Go
-- (alerting/notify/registry): a connection is written only for a
-- registered team channel (ChannelService checks it at write), a delivery
-- only for a channel the fan-out planned from the registry. The database
-- keeps the form of an id only, so a new destination needs no migration.
-- The recipient check (a person for personal channels, none for team
-- channels) is kept in Go for the same reason.
ALTER TABLE webhook_connections DROP CONSTRAINT IF EXISTS webhook_connections_channel_check;
ALTER TABLE webhook_connections ADD CONSTRAINT webhook_connections_channel_form
    CHECK (channel ~ '^[a-z][a-z0-9_]{0,31}$');
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_channel_check;
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_channel_form
    CHECK (channel ~ '^[a-z][a-z0-9_]{0,31}$');

-- url_ciphertext holds each destination's sealed connection secret: a URL,
-- a PagerDuty routing key, or a signed webhook's URL and signing secrets.

-- A rule's severity, shown in every message and mapped to PagerDuty's.
ALTER TABLE rules
    ADD COLUMN severity text NOT NULL DEFAULT 'error'
        CHECK (severity IN ('critical', 'error', 'warning', 'info'));

-- What a delivery carries besides its text: the rule's severity when it
-- was made (the log filters on it), the start of the firing episode it
-- belongs to (last_fired_at: the firing, its re-notifications and its
-- resolve share it, which makes PagerDuty's dedup_key), and the numbers
-- (metric, comparator, threshold, value) for structured destinations.
ALTER TABLE deliveries
    ADD COLUMN severity text NOT NULL DEFAULT 'error',
    ADD COLUMN episode_at timestamptz,
    ADD COLUMN details jsonb;
CREATE INDEX deliveries_account_severity_idx ON deliveries (account_id, severity, created_at DESC, id DESC);
