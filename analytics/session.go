package analytics

import (
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// Page sizes of the sessions list.
const (
	DefaultSessionLimit = 50
	MaxSessionLimit     = 500
)

// SessionPage is one page of the sessions of an MCP over a range
// (GET /v1/mcps/{id}/sessions).
//
// A session is in the range when it has at least one item in the range:
// the same sessions that Overview.Sessions counts. Its figures (started_at,
// last_seen_at, calls, errors) cover its items within the range, so a
// session running across midnight shows, for a one-day range, the part of
// it on that day. Sessions come newest started_at first, ties by session id
// descending, and the cursor is a position in that order: walking the pages
// visits every session once, even while new items arrive. (A late item
// older than a session's first item moves its started_at; such a session
// can be seen twice or not at all, the only exception.)
type SessionPage struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Items []Session `json:"items"`
	// NextCursor fetches the next page; null on the last page.
	NextCursor *string `json:"next_cursor"`
}

// Session is one session's figures within the range.
type Session struct {
	SessionID  string    `json:"session_id"`
	StartedAt  time.Time `json:"started_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	Calls      int64     `json:"calls"`
	Errors     int64     `json:"errors"`
	// ClientName and ClientVersion come from the session's first item that
	// names a client, UserID from its first item with a user id; each is
	// null when no item carried one.
	ClientName    *string `json:"client_name"`
	ClientVersion *string `json:"client_version"`
	UserID        *string `json:"user_id"`
}

// SessionCursor is a position in the sessions order: the last session of
// the previous page. On the wire it is opaque (base64url of JSON).
type SessionCursor struct {
	StartedAt time.Time
	SessionID string
}

type wireCursor struct {
	T int64  `json:"t"` // started_at, Unix milliseconds
	S string `json:"s"`
}

// Encode returns the cursor's wire form.
func (c SessionCursor) Encode() string {
	return telemetry.EncodeCursor(wireCursor{T: c.StartedAt.UnixMilli(), S: c.SessionID})
}

// ParseSessionCursor decodes a cursor from the query string. An empty
// string means the first page (nil cursor). Anything that Encode did not
// produce fails with EBADREQUEST on query.cursor.
func ParseSessionCursor(s string) (*SessionCursor, error) {
	if s == "" {
		return nil, nil
	}
	var w wireCursor
	if err := telemetry.DecodeCursor(s, &w); err != nil {
		return nil, err
	}
	if w.S == "" || w.T < 0 || utf8.RuneCountInString(w.S) > MaxSessionIDLen || !utf8.ValidString(w.S) {
		return nil, telemetry.BadCursor()
	}
	return &SessionCursor{StartedAt: time.UnixMilli(w.T).UTC(), SessionID: w.S}, nil
}

// SessionLimit applies the page-size rules: 0 means DefaultSessionLimit,
// and anything outside 1..MaxSessionLimit fails with EINVALID on
// query.limit.
func SessionLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultSessionLimit, nil
	case limit < 0 || limit > MaxSessionLimit:
		return 0, telemetry.FieldError(telemetry.EINVALID, "query.limit", "limit must be between 1 and %d.", MaxSessionLimit)
	}
	return limit, nil
}
