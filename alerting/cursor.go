package alerting

import (
	"time"

	"github.com/mcpscope/telemetry"
)

// DeliveryCursor is a position in a delivery list (the inbox, the
// notification log): the last delivery of a page. Both lists are ordered by
// creation time, newest first, ties broken by id descending, so the next page
// is everything strictly after this position. A keyset cursor, unlike an
// offset, neither skips nor repeats items when new deliveries arrive while a
// client pages.
type DeliveryCursor struct {
	CreatedAt time.Time
	ID        string
}

// wireDeliveryCursor is the cursor's JSON before base64; T is microseconds,
// the precision deliveries are stored with, so the position is exact.
type wireDeliveryCursor struct {
	T int64  `json:"t"`
	I string `json:"i"`
}

// Encode returns the cursor's opaque wire form.
func (c DeliveryCursor) Encode() string {
	return telemetry.EncodeCursor(wireDeliveryCursor{T: c.CreatedAt.UnixMicro(), I: c.ID})
}

// maxCursorMicros is the end of year 9999 UTC in microseconds.
const maxCursorMicros = 253402300799999999

// ParseDeliveryCursor decodes a cursor from the query string. An empty
// string means the first page (nil cursor). Anything Encode did not produce
// fails with EBADREQUEST on query.cursor, like the sessions cursor: a
// malformed parameter is a 400.
func ParseDeliveryCursor(s string) (*DeliveryCursor, error) {
	if s == "" {
		return nil, nil
	}
	var w wireDeliveryCursor
	if err := telemetry.DecodeCursor(s, &w); err != nil {
		return nil, err
	}
	// The time must be one a delivery can have: a position far outside
	// PostgreSQL's range would fail the query instead of paging.
	if !PlausibleID(w.I) || w.T < 0 || w.T > maxCursorMicros {
		return nil, telemetry.BadCursor()
	}
	return &DeliveryCursor{CreatedAt: time.UnixMicro(w.T).UTC(), ID: w.I}, nil
}

// MaxIDLen bounds the ids this package accepts from outside (paths, inbox
// read bodies, cursors). Ids are opaque, but every id the service issues is
// short and made of letters, digits, _ and -.
const MaxIDLen = 64

// PlausibleID reports whether s could be an id the service issued. Anything
// else is unknown by construction, so stores answer not found (or ignore it)
// without a query; this also keeps NUL bytes and invalid UTF-8, which
// PostgreSQL refuses in text, away from the database.
func PlausibleID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
