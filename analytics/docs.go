package analytics

// InsightsDoc documents GET /v1/mcps/{id}/insights in the generated
// reference: every field, and the parameters that shaped each list.
const InsightsDoc = `What needs attention in an MCP over the range. Every list states the parameters that
shaped it next to its items, and is computed from the same data as the overview and tool
reads, so its figures agree with them.

- ` + "`slowest_tools`" + ` ` + "`{limit, items: [{name, calls, p95_ms, p50_ms}]}`" + `: the tools (` + "`tools/call`" + `) with the
  highest p95 latency, at most ` + "`limit`" + ` (10), p95 descending then name. Tools whose calls carry no
  ` + "`duration_ms`" + ` cannot be ranked and are left out.
- ` + "`failing_tools`" + ` ` + "`{min_calls, limit, items: [{name, calls, errors, error_rate}]}`" + `: the tools with the
  highest error rate among those with at least ` + "`min_calls`" + ` (10) calls and one error, at most
  ` + "`limit`" + ` (10), error rate descending, then calls, then name.
- ` + "`top_errors`" + ` ` + "`{limit, items: [{error_type, method, name, count, last_message, last_seen_at}]}`" + `: the
  most frequent errors of any method, grouped by method, name (tool, resource or prompt) and
  error type (empty when the items said only ` + "`status: error`" + `), with the last message and when it
  was seen; at most ` + "`limit`" + ` (10), count descending then most recent.
- ` + "`clients`" + ` ` + "`{limit, items: [{client_name, client_version, protocol_versions, calls, sessions, call_share, session_share}]}`" + `:
  client name and version (empty when not sent) by calls descending, at most ` + "`limit`" + ` (20).
  ` + "`protocol_versions`" + ` lists the MCP protocol revisions the client made its calls under,
  by calls descending (empty when its items carried no ` + "`protocol_version`" + `).
  ` + "`call_share`" + ` is calls over all calls of the range; ` + "`session_share`" + ` sessions over all
  sessions (a session that changed client counts for each, so session shares can sum to more
  than 1).
- ` + "`idle_tools`" + ` ` + "`{lookback_days, items: [{name, last_seen_at, calls_before}]}`" + `: tools called in the
  ` + "`lookback_days`" + ` (28) days before ` + "`from`" + ` and not at all in the range — often a broken or renamed
  tool; ` + "`calls_before`" + ` descending, then name.
- ` + "`nightly`" + ` and ` + "`nightly_as_of`" + `: as in the overview.`

// SessionsDoc documents GET /v1/mcps/{id}/sessions.
const SessionsDoc = `The sessions of an MCP in the range, newest ` + "`started_at`" + ` first (ties by session id), paginated
with ` + "`limit`" + ` (default 50, at most 500) and the opaque ` + "`cursor`" + ` from ` + "`next_cursor`" + ` (null on the last
page). A session is in the range when it has at least one item in it — the sessions the
overview counts — and its figures (` + "`started_at`" + `, ` + "`last_seen_at`" + `, ` + "`calls`" + `, ` + "`errors`" + `) cover its items
within the range; ` + "`client_name`" + `, ` + "`client_version`" + ` and ` + "`user_id`" + ` are those of its first item. The cursor
is a position in that order, so walking the pages visits every session exactly once even while
new data arrives (the one exception: a late item older than a session's first item moves its
start). A malformed cursor is 400 ` + "`bad_request`" + `.`
