-- A rule on errors or error_rate may count one error kind only
-- (docs/failures.md); null counts every error. The service validates the
-- kind (alerting.RuleCreate).
ALTER TABLE rules ADD COLUMN IF NOT EXISTS error_kind text;
