-- The emitters (resources: a hash of service.name and service.instance.id)
-- that sent MCP spans to an MCP over OTLP, and when last. The OTLP metrics
-- path skips the mcp.server.operation.duration points of an emitter that
-- sent spans in the last 24 hours, so one that sends both signals is
-- counted once, from its spans (otlp/MAPPING.md, "Metrics"). The trace
-- path writes a row at most once a minute per emitter; rows older than a
-- few days are deleted by the same path.
CREATE TABLE otlp_span_sources (
    mcp_id        text        NOT NULL,
    resource_hash text        NOT NULL,
    last_span_at  timestamptz NOT NULL,
    PRIMARY KEY (mcp_id, resource_hash)
);
CREATE INDEX otlp_span_sources_last_span_at ON otlp_span_sources (last_span_at);
