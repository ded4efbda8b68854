package analytics

import (
	"time"

	"github.com/mcpscope/telemetry"
)

// Page sizes of a session timeline.
const (
	DefaultTimelineLimit = 100
	MaxTimelineLimit     = 1000
)

// SessionTimeline is one session's items, oldest first
// (GET /v1/mcps/{id}/sessions/{session_id}). Its figures cover the items
// within the window asked for (the whole session without from and to),
// whatever the page: StartedAt and LastSeenAt are its first and last item,
// ClientName, ClientVersion and UserID those of its first item carrying
// one (as in Session).
type SessionTimeline struct {
	SessionID     string         `json:"session_id"`
	StartedAt     time.Time      `json:"started_at"`
	LastSeenAt    time.Time      `json:"last_seen_at"`
	Calls         int64          `json:"calls"`
	Errors        int64          `json:"errors"`
	ClientName    *string        `json:"client_name"`
	ClientVersion *string        `json:"client_version"`
	UserID        *string        `json:"user_id"`
	Items         []TimelineItem `json:"items"`
	// NextCursor fetches the next page; null on the last page.
	NextCursor *string `json:"next_cursor"`
}

// TimelineItem is one item of a session, as ingested. Optional strings
// that the item did not carry are null; Attributes is {} without any.
type TimelineItem struct {
	ID           *string           `json:"id"`
	Timestamp    time.Time         `json:"timestamp"`
	Method       string            `json:"method"`
	Name         *string           `json:"name"`
	DurationMs   *float64          `json:"duration_ms"`
	Status       string            `json:"status"`
	ErrorType    *string           `json:"error_type"`
	ErrorMessage *string           `json:"error_message"`
	Attributes   map[string]string `json:"attributes"`
	// ErrorKind is the error's kind (null on success).
	ErrorKind *string `json:"error_kind"`
	// ResponseBytes is the answer's size, null when not measured.
	ResponseBytes *int64 `json:"response_bytes"`
	// Repeat is 0, or n when this tools/call item is the nth repeat in a
	// row of the session's previous call (RepeatOf).
	Repeat int `json:"repeat"`
}

// TimeWindow optionally narrows a read to [From, End). A zero From or End
// leaves that side open.
type TimeWindow struct {
	From time.Time
	End  time.Time
}

// ParseTimeWindow reads the optional from and to query parameters of a
// session timeline: whole UTC days like ParseRange, but either may be
// omitted (that side is then open) and no length limit applies (a session
// bounds the read). Malformed dates fail with EINVALIDDATE, from after to
// with EINVALIDRANGE.
func ParseTimeWindow(from, to string) (TimeWindow, error) {
	var w TimeWindow
	if from != "" {
		d, err := parseDate(from)
		if err != nil {
			return w, telemetry.FieldError(telemetry.EINVALIDDATE, "query.from", "from must be a date written YYYY-MM-DD, not %q.", from)
		}
		w.From = d
	}
	if to != "" {
		d, err := parseDate(to)
		if err != nil {
			return w, telemetry.FieldError(telemetry.EINVALIDDATE, "query.to", "to must be a date written YYYY-MM-DD, not %q.", to)
		}
		w.End = d.Add(day)
	}
	if !w.From.IsZero() && !w.End.IsZero() && !w.From.Before(w.End) {
		return w, telemetry.FieldError(telemetry.EINVALIDRANGE, "query.from", "from (%s) must not be after to (%s).", from, to)
	}
	return w, nil
}

// TimelineCursor is a position in a session's items: the time of the last
// item of the previous page (Unix milliseconds) and how many items of that
// very millisecond the previous pages returned. Items of one millisecond
// come in a fixed order, so skipping that many resumes exactly, even for
// items that are identical in every field. On the wire it is opaque
// (base64url of JSON).
type TimelineCursor struct {
	At   time.Time
	Skip int
}

type wireTimelineCursor struct {
	T int64 `json:"t"`
	N int   `json:"n"`
}

// Encode returns the cursor's wire form.
func (c TimelineCursor) Encode() string {
	return telemetry.EncodeCursor(wireTimelineCursor{T: c.At.UnixMilli(), N: c.Skip})
}

// ParseTimelineCursor decodes a cursor from the query string: nil for "",
// EBADREQUEST on query.cursor for anything Encode did not produce.
func ParseTimelineCursor(s string) (*TimelineCursor, error) {
	if s == "" {
		return nil, nil
	}
	var w wireTimelineCursor
	if err := telemetry.DecodeCursor(s, &w); err != nil {
		return nil, err
	}
	if w.T < 0 || w.N < 1 || w.N > 1<<30 {
		return nil, telemetry.BadCursor()
	}
	return &TimelineCursor{At: time.UnixMilli(w.T).UTC(), Skip: w.N}, nil
}

// TimelineLimit applies the page-size rules: 0 means DefaultTimelineLimit,
// anything outside 1..MaxTimelineLimit fails with EINVALID on query.limit.
func TimelineLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultTimelineLimit, nil
	case limit < 0 || limit > MaxTimelineLimit:
		return 0, telemetry.FieldError(telemetry.EINVALID, "query.limit", "limit must be between 1 and %d.", MaxTimelineLimit)
	}
	return limit, nil
}

// TimelineDoc documents GET /v1/mcps/{id}/sessions/{session_id}.
const TimelineDoc = `One session's items, oldest first: a timeline of its calls with their durations and errors.
The session id is percent-encoded in the path (` + "`a/b`" + ` is ` + "`a%2Fb`" + `). Paginated with ` + "`limit`" + ` (default 100,
at most 1000) and the opaque ` + "`cursor`" + ` from ` + "`next_cursor`" + ` (null on the last page); items of the same
millisecond come in a fixed order, so walking the pages returns every item once.

` + "`from`" + ` and ` + "`to`" + ` (YYYY-MM-DD, whole UTC days, each optional) narrow the timeline to those days; without
them it covers the whole session, however long ago it ran, from the first day the account keeps (` + "`kept_from`" + ` on
/v1/account) on. The figures (` + "`started_at`" + `, ` + "`last_seen_at`" + `,
` + "`calls`" + `, ` + "`errors`" + `) cover the items in that window; ` + "`client_name`" + `, ` + "`client_version`" + ` and ` + "`user_id`" + ` are those
of its first item carrying one. Item fields the item did not carry (` + "`id`" + `, ` + "`name`" + `, ` + "`duration_ms`" + `,
` + "`error_type`" + `, ` + "`error_message`" + `) are null; ` + "`attributes`" + ` is ` + "`{}`" + ` without any.

404 ` + "`not_found`" + ` when the MCP has no item of that session (in the window, when one is given). A malformed
cursor is 400 ` + "`bad_request`" + `.

Example: ` + "`GET /v1/mcps/mcp_1/sessions/s-81?limit=2`" + `

` + "```json" + `
{"session_id": "s-81", "started_at": "2026-11-20T10:00:00.12Z", "last_seen_at": "2026-11-20T10:04:10Z",
 "calls": 3, "errors": 1, "client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-42",
 "items": [
  {"id": "6f1c2a9e", "timestamp": "2026-11-20T10:00:00.12Z", "method": "initialize", "name": null,
   "duration_ms": 3, "status": "ok", "error_type": null, "error_message": null, "attributes": {}},
  {"id": null, "timestamp": "2026-11-20T10:00:01Z", "method": "tools/call", "name": "search_docs",
   "duration_ms": 182.5, "status": "error", "error_type": "TimeoutError",
   "error_message": "upstream timed out", "attributes": {"region": "eu"}}],
 "next_cursor": "eyJ0IjoxNzYzNjMyODAxMDAwLCJuIjoxfQ"}
` + "```"
