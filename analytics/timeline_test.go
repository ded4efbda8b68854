package analytics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func TestParseTimeWindow(t *testing.T) {
	for _, c := range []struct {
		from, to, code string
	}{
		{"", "", ""}, {"2026-03-01", "", ""}, {"", "2026-03-01", ""}, {"2026-03-01", "2026-03-01", ""},
		{"2026-03-02", "2026-03-01", telemetry.EINVALIDRANGE}, {"2026-3-1", "", telemetry.EINVALIDDATE}, {"", "x", telemetry.EINVALIDDATE},
	} {
		_, err := analytics.ParseTimeWindow(c.from, c.to)
		if c.code == "" && err != nil || c.code != "" && telemetry.ErrorCode(err) != c.code {
			t.Errorf("%q..%q: %v, want %q", c.from, c.to, err, c.code)
		}
	}
}

func FuzzParseTimelineCursor(f *testing.F) {
	f.Add("")
	f.Add(analytics.TimelineCursor{At: time.UnixMilli(1772409599999), Skip: 3}.Encode())
	f.Add("eyJ0IjoxLCJuIjowfQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := analytics.ParseTimelineCursor(s)
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
		again, err := analytics.ParseTimelineCursor(c.Encode())
		if err != nil || !again.At.Equal(c.At) || again.Skip != c.Skip || c.Skip < 1 {
			t.Fatalf("cursor %q: re-encoded %+v does not round-trip: %+v %v", s, c, again, err)
		}
	})
}

func FuzzParseBreakdownQuery(f *testing.F) {
	f.Add("tool", "ok", 0)
	f.Add("attribute:k'\"?", "", 200)
	f.Add("attribute:", "error", -1)
	f.Fuzz(func(t *testing.T, by, status string, limit int) {
		q, err := analytics.ParseBreakdownQuery(by, "", "", "", status, limit)
		if err != nil {
			if telemetry.ErrorCode(err) != telemetry.EINVALID {
				t.Fatalf("%q %q %d: %v", by, status, limit, err)
			}
			return
		}
		if q.Limit < 1 || q.Limit > analytics.MaxBreakdownLimit || (q.AttributeKey != "") != strings.HasPrefix(by, analytics.ByAttributePrefix) ||
			(q.AttributeKey != "" && analytics.ByAttributePrefix+q.AttributeKey != by) {
			t.Fatalf("%q %q %d: accepted as %+v", by, status, limit, q)
		}
	})
}
