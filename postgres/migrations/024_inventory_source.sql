-- 024: the tool inventory says which kind of report it came from: 'sdk'
-- (an SDK's or the Go middleware's report, the default, and every row
-- written before) or 'probe' (a probe's tools/list). docs/inventory.md.

ALTER TABLE inventory_changes ADD COLUMN IF NOT EXISTS source text NOT NULL DEFAULT 'sdk'
    CHECK (source IN ('sdk', 'probe'));
ALTER TABLE inventory_tools ADD COLUMN IF NOT EXISTS source text NOT NULL DEFAULT 'sdk'
    CHECK (source IN ('sdk', 'probe'));
