-- 021: rules compared with the previous release (baseline
-- 'previous_release', docs/releases.md): the window's value divided by the
-- previous release's over its last 24 hours of traffic.

ALTER TABLE rules DROP CONSTRAINT IF EXISTS rules_baseline_check;
ALTER TABLE rules ADD CONSTRAINT rules_baseline_check CHECK (baseline IN ('week_ago', 'seasonal', 'previous_release'));
