-- Probe results (docs/probes.md): one row per check of a probe, what
-- GET /v1/probes/{probeId}/results lists and the uptime figures count.
-- Day partitions on the check's time: 18.16 has no TTL, so the probes'
-- own retention (probes.result_days) drops whole days, and the
-- installation's and accounts' retention cut the table like every other
-- (clickhouse/lifecycle.go derives it from this statement); deleting the
-- MCP deletes its rows (mcp_id). error is "kind: detail" ("" when up).
CREATE TABLE IF NOT EXISTS {{local "probe_results"}}
(
    account_id       String,
    mcp_id           String,
    probe_id         String,
    at               DateTime('UTC'),
    at_ms            UInt16,
    is_up            UInt8,
    latency_ms       Float64,
    error            String,
    error_kind       LowCardinality(String),
    protocol_version LowCardinality(String),
    schema_hash      String
)
ENGINE = {{engine "MergeTree"}}
PARTITION BY toDate(at)
ORDER BY (mcp_id, probe_id, at);
{{distributed "probe_results" "cityHash64(mcp_id)"}}
