// Package otlp is the pure half of the OTLP/HTTP receivers
// (POST /v1/otlp/v1/traces, /metrics, /logs): it decodes OTLP trace and
// metrics export requests (protobuf or JSON), turns the spans and metric
// points that describe MCP calls into ingest items, and encodes the OTLP
// responses. The HTTP route, authentication,
// decompression and body limits belong to httpapi; nothing here does I/O.
//
// The mapping follows the OpenTelemetry semantic conventions for the Model
// Context Protocol (semconv v1.39 and later); MAPPING.md in this directory is
// the same text for docs/sdks.md and /docs. In short:
//
// Which spans are stored: a span is an MCP call when it carries the string
// attribute mcp.method.name. Only server-side spans count: kind SERVER, and
// INTERNAL or UNSPECIFIED because OpenTelemetry SDKs give those to spans whose
// author did not set a kind. CLIENT spans describe calls the server makes to
// others (to another MCP server, or server-initiated requests such as
// sampling/createMessage), PRODUCER and CONSUMER spans describe messaging: all
// are rejected. An INTERNAL or UNSPECIFIED MCP span whose parent, in the same
// request, is itself an MCP span is rejected too, as nested instrumentation of
// the same call (the parent is preferred). A span whose trace id is not 16
// bytes or span id not 8 bytes, or either is all zeros, is malformed
// (OTLP requires both) and rejected.
//
// Fields: mcp.method.name → method; gen_ai.tool.name, mcp.tool.name,
// gen_ai.prompt.name, mcp.prompt.name, mcp.resource.uri (first present) →
// name, else, for tools/call and prompts/get, the target in a span named
// "{method} {target}"; mcp.session.id → session_id, else none (the service
// derives the session, docs/sessions.md); start time → timestamp; end minus start → duration_ms (absent if
// the end is missing or before the start); status ERROR or an error.type
// attribute → status error, with error_type from error.type, else
// rpc.response.status_code, else the exception event's exception.type, else
// "_OTHER", and error_message from the status message, else the exception
// event's exception.message; mcp.client.name and mcp.client.version (not in
// the conventions, which define no client identity) → client_name and
// client_version; user.id or enduser.id (span, then resource) → user_id;
// resource service.version → server_version; hex trace id + hex span id (48
// characters) → id, so re-sent spans are dropped as duplicates; a fixed list
// of span and resource attributes (see attributeKeys) → attributes.
//
// Other conventions real instrumentations emit are read too (see
// openllmetry.go, openlit.go and MAPPING.md): OpenLLMetry's spans named
// "<tool>.tool" and "<method>.mcp" (both CLIENT and SERVER kinds are calls;
// the two sides of one call share an item id, so it counts once), OpenLIT's
// "mcp <method>" spans with mcp.method, the AWS distro's gen_ai.prompt and
// "mcp "-prefixed span names, Sentry's mcp.tool.result.is_error and
// mcp.server.version, Shinzo's resource mcp.session.id. A span following
// none of them stays rejected, and so does every notification
// (notifications/...): it is not a request.
//
// The metrics path (metrics.go) reads the mcp.server.operation.duration
// histogram, delta temporality only, as calls: a point of count N is N
// items at the midpoints of their buckets, with ids hashed from the point so
// a retried export counts once, skipped when the same emitter sent MCP spans
// in the last 24 hours (spans win). The logs path stores nothing
// (signals.go): its bodies are checked and counted on the bytes, and every
// log record is reported in partial_success.
//
// Each item then goes through analytics.Item's Normalize and Validate, so
// OTLP items obey exactly the rules of POST /v1/ingest; an item that fails is
// rejected. Rejected spans are reported to the exporter in the response's
// partial_success.rejected_spans, never stored.
package otlp

// Media types of the two OTLP/HTTP encodings. The response uses the
// request's.
const (
	ContentTypeProtobuf = "application/x-protobuf"
	ContentTypeJSON     = "application/json"
)
