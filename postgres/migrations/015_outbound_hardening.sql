-- 015: email only to addresses that asked for it, a budget for email, and
-- a history that records every end (docs/delivery.md, docs/operations.md).
--
-- email_verified_at: when the person proved the address (the link of a
-- verification message); null while unverified. Addresses that exist when
-- this ships are kept as verified (the upgrade notes say so).
-- verification_sent_at: the last verification message, for the re-send
-- limit (one a minute).
ALTER TABLE users
    ADD COLUMN email_verified_at timestamptz,
    ADD COLUMN verification_sent_at timestamptz;
UPDATE users SET email_verified_at = now();

-- A pending verification: the SHA-256 of its single-use token, the address
-- it proves (a changed address makes it useless) and its expiry (24 h).
-- One per person: a new one replaces the old.
CREATE TABLE email_verifications (
    token_hash bytea PRIMARY KEY,
    user_id    text NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    email_key  text NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The per-account email budget counts the emails attempted in the last
-- hour.
CREATE INDEX deliveries_email_attempts_idx ON deliveries (account_id, last_attempt_at)
    WHERE channel = 'email' AND last_attempt_at IS NOT NULL;

-- Why a firing ended without resolving: redefined, disabled or deleted
-- (null for an evaluation that resolved it). A deleted rule's history
-- stays readable by its id, so the events no longer go with the rule; they
-- go with the account.
ALTER TABLE rule_events
    ADD COLUMN reason text CHECK (reason IN ('redefined', 'disabled', 'deleted')),
    DROP CONSTRAINT rule_events_rule_id_fkey;
