-- 007: alerts that reach people. Email and team-chat deliveries are sent
-- by the outbox worker of every instance (docs/delivery.md): a delivery is
-- claimed with a lease (lease_owner, lease_until), each attempt recorded
-- (attempts, last_attempt_at, last_error), then sent (sent_at, message_id)
-- or failed. queued_at and round_attempts start a new round of retries
-- when an admin retries a failed delivery. Team-chat connections keep
-- their health and whether the provider revoked them.

ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
    CHECK (status IN ('delivered', 'queued', 'sent', 'failed'));

ALTER TABLE deliveries
    ADD COLUMN kind text NOT NULL DEFAULT 'firing' CHECK (kind IN ('firing', 'resolved', 'notice')),
    ADD COLUMN summary text NOT NULL DEFAULT '',
    ADD COLUMN last_attempt_at timestamptz,
    ADD COLUMN message_id text,
    ADD COLUMN lease_owner text,
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN queued_at timestamptz,
    ADD COLUMN round_attempts integer NOT NULL DEFAULT 0;

UPDATE deliveries SET queued_at = created_at WHERE status = 'queued';

-- The admins' log filtered by status.
CREATE INDEX deliveries_account_status_idx ON deliveries (account_id, status, created_at DESC, id DESC);

ALTER TABLE webhook_connections
    ADD COLUMN broken_at timestamptz,
    ADD COLUMN last_sent_at timestamptz,
    ADD COLUMN last_failed_at timestamptz,
    ADD COLUMN last_error text;

-- While firing, deliver again every renotify_minutes (null: never).
-- last_notified_at is the last firing or re-notification.
ALTER TABLE rules
    ADD COLUMN renotify_minutes integer CHECK (renotify_minutes IS NULL OR renotify_minutes >= 5),
    ADD COLUMN last_notified_at timestamptz;
