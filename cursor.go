package telemetry

import (
	"encoding/base64"
	"encoding/json"
)

// The page cursors of every list (sessions, a session's timeline, the
// inbox, the notification log) share one wire scheme: the base64url (no
// padding) of a small JSON object. The object is the list's own; clients
// treat the whole string as opaque and only echo next_cursor back.

// EncodeCursor returns the opaque wire form of the cursor object w.
func EncodeCursor(w any) string {
	b, _ := json.Marshal(w)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor decodes the wire form s into w. Anything EncodeCursor did
// not produce fails with BadCursor; the caller checks the decoded fields
// and answers BadCursor too when they are out of range.
func DecodeCursor(s string, w any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return BadCursor()
	}
	if err := json.Unmarshal(b, w); err != nil {
		return BadCursor()
	}
	return nil
}

// BadCursor is the error of a malformed cursor: EBADREQUEST on
// query.cursor, so a client that made one up gets a 400, not a 5xx.
func BadCursor() error {
	return FieldError(EBADREQUEST, "query.cursor", "The cursor is malformed; use the next_cursor of a previous page.")
}
