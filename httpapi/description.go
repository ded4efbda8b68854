package httpapi

// apiDescription is the top of the generated reference: the conventions that
// no single operation shows.
const apiDescription = `Telemetry and alerting for MCP servers: ingest batches of telemetry, read
metrics per MCP, define alert rules delivered to an in-app inbox, email and
team chat.

## Conventions
- Wire version 1 lives under ` + "`/v1`" + `; every response carries ` + "`API-Version: 1`" + `.
- JSON bodies with ` + "`Content-Type: application/json`" + ` (ingest also takes ` + "`Content-Encoding: gzip`" + `);
  another content type is refused with 415. Unknown fields in request bodies are rejected,
  except inside ingest items (ignored, for forward compatibility).
- Field names are snake_case. Timestamps are RFC 3339 UTC with a ` + "`Z`" + `. Dates are
  ` + "`YYYY-MM-DD`" + ` and always denote whole UTC days.
- IDs are opaque strings. Lists are ` + "`{\"items\": [...]}`" + `; paginated lists add ` + "`next_cursor`" + `
  (null on the last page) and take ` + "`limit`" + ` and ` + "`cursor`" + `.
- Creating answers 201 with the resource; PUT and PATCH answer 200 with the whole resource;
  DELETE answers 204.
- Path parameters are percent-decoded: the tool ` + "`a/b`" + ` is ` + "`/v1/mcps/{id}/tools/a%2Fb`" + `.
  Strings are stored and returned exactly as sent.

## Credentials
Both travel as ` + "`Authorization: Bearer <credential>`" + `. Session tokens (` + "`sess_…`" + `, from signup
and login) may call every read and account endpoint and are refused on ingest. Ingest keys
(` + "`ik_…`" + `) may only post telemetry. The wrong kind answers 403 ` + "`credential_not_allowed`" + `; a
missing or unknown credential 401 ` + "`unauthenticated`" + `; a member doing an admin's work 403
` + "`forbidden`" + `. Another account's resources answer 404, as if they did not exist.

## Errors
Every non-2xx response is an RFC 9457 problem document (` + "`application/problem+json`" + `) with a
stable ` + "`code`" + `, a human ` + "`detail`" + ` and, for input errors, ` + "`errors[].location`" + ` such as ` + "`query.from`" + `.
400 malformed request (` + "`bad_request`" + `, ` + "`invalid_date`" + `); 401; 403; 404 ` + "`not_found`" + `; 405
` + "`method_not_allowed`" + `; 409 ` + "`conflict`" + `; 413 ` + "`payload_too_large`" + `/` + "`too_many_items`" + `; 415
` + "`unsupported_media_type`" + `; 422 ` + "`invalid`" + ` and the specific ` + "`invalid_range`" + `, ` + "`range_too_large`" + `,
` + "`webhook_host_not_allowed`" + `; 429 ` + "`rate_limited`" + ` with ` + "`Retry-After`" + ` (whole seconds); 500 ` + "`internal`" + `
(never with internal detail); 503 ` + "`unavailable`" + ` with ` + "`Retry-After`" + ` when a dependency is down.
Bad input never produces a 5xx.

## Versioning
Breaking changes need ` + "`/v2`" + `: removing or renaming a field, endpoint or enum value; changing a
type, a default, a status code or an error ` + "`code`" + `; making an optional request field required;
tightening validation of existing input. Not breaking: new endpoints, new optional request
fields, new response fields, new ` + "`code`" + ` values for new failures. Clients must ignore unknown
response fields.

## Hosts
The base address in ` + "`servers`" + ` below is also the SDK's default endpoint. An older hosting address
still answers, with ` + "`Deprecation: true`" + ` and ` + "`Link: <base>; rel=\"successor-version\"`" + `; nothing may be
pointed at it.`
