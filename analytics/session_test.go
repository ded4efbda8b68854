package analytics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func TestSessionCursorRoundTrip(t *testing.T) {
	for _, c := range []analytics.SessionCursor{
		{StartedAt: time.Date(2026, 3, 1, 23, 59, 59, 999e6, time.UTC), SessionID: "s-81"},
		{StartedAt: time.UnixMilli(0).UTC(), SessionID: "搜索 🚀 \"quoted\" \\ /"},
	} {
		enc := c.Encode()
		if strings.ContainsAny(enc, "+/=") {
			t.Errorf("cursor %q is not URL-safe", enc)
		}
		got, err := analytics.ParseSessionCursor(enc)
		if err != nil || !got.StartedAt.Equal(c.StartedAt) || got.SessionID != c.SessionID {
			t.Errorf("round trip of %+v = %+v, %v", c, got, err)
		}
	}
	if c, err := analytics.ParseSessionCursor(""); c != nil || err != nil {
		t.Errorf("empty cursor = %v, %v", c, err)
	}
}

func TestParseSessionCursorRejects(t *testing.T) {
	for _, s := range []string{"!", "e30", "bnVsbA", "eyJ0IjoxfQ", "eyJ0IjotMSwicyI6ImEifQ", "W10", "eyJ0IjoiMSIsInMiOiJhIn0"} {
		_, err := analytics.ParseSessionCursor(s)
		var te *telemetry.Error
		if !errors.As(err, &te) || te.Code != telemetry.EBADREQUEST || te.Field != "query.cursor" {
			t.Errorf("cursor %q: %v", s, err)
		}
	}
}

func TestSessionLimit(t *testing.T) {
	for in, want := range map[int]int{0: 50, 1: 1, 500: 500} {
		if got, err := analytics.SessionLimit(in); got != want || err != nil {
			t.Errorf("SessionLimit(%d) = %d, %v", in, got, err)
		}
	}
	for _, in := range []int{-1, 501} {
		if _, err := analytics.SessionLimit(in); telemetry.ErrorCode(err) != telemetry.EINVALID {
			t.Errorf("SessionLimit(%d): %v", in, err)
		}
	}
}

// FuzzParseSessionCursor: any string is a cursor that round-trips, or an
// EBADREQUEST; never a panic.
func FuzzParseSessionCursor(f *testing.F) {
	f.Add("")
	f.Add(analytics.SessionCursor{StartedAt: time.UnixMilli(1772409599999), SessionID: "s-1"}.Encode())
	f.Add("eyJ0IjoxLCJzIjoiIn0")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := analytics.ParseSessionCursor(s)
		if err != nil {
			if telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
				t.Fatalf("cursor %q: %v", s, err)
			}
			return
		}
		if c == nil {
			if s != "" {
				t.Fatalf("cursor %q decoded to nil", s)
			}
			return
		}
		again, err := analytics.ParseSessionCursor(c.Encode())
		if err != nil || !again.StartedAt.Equal(c.StartedAt) || again.SessionID != c.SessionID {
			t.Fatalf("cursor %q: re-encoded %+v does not round-trip: %+v %v", s, c, again, err)
		}
	})
}
