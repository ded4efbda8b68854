-- 020: rules that learn the week's rhythm (baseline 'seasonal' with a
-- sensitivity), the band they judged with kept in their history.

ALTER TABLE rules DROP CONSTRAINT IF EXISTS rules_baseline_check;
ALTER TABLE rules ADD CONSTRAINT rules_baseline_check CHECK (baseline IN ('week_ago', 'seasonal'));
-- Set (low, medium or high) exactly when the baseline is seasonal.
ALTER TABLE rules ADD COLUMN sensitivity text CHECK (sensitivity IN ('low', 'medium', 'high'));
ALTER TABLE rules ADD CONSTRAINT rules_sensitivity_seasonal
    CHECK ((sensitivity IS NOT NULL) = (baseline IS NOT DISTINCT FROM 'seasonal'));

-- A seasonal rule's expected band at the transition; null for other rules.
ALTER TABLE rule_events
    ADD COLUMN expected_low double precision,
    ADD COLUMN expected_high double precision;
