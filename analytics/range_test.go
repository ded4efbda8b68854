package analytics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func TestParseRange(t *testing.T) {
	today := time.Date(2026, 11, 20, 23, 59, 59, 0, time.FixedZone("X", -5*3600)) // 2026-11-21 UTC
	tests := []struct {
		from, to         string
		wantFrom, wantTo string
		code, field      string
		days             int
	}{
		{"", "", "2026-11-15", "2026-11-21", "", "", 7},
		{"", "2026-03-01", "2026-02-23", "2026-03-01", "", "", 7},
		{"2026-11-01", "", "2026-11-01", "2026-11-21", "", "", 21},
		{"2026-11-01", "2026-11-01", "2026-11-01", "2026-11-01", "", "", 1},
		{"2024-02-29", "2024-03-01", "2024-02-29", "2024-03-01", "", "", 2},
		{"2023-01-01", "2025-12-31", "2023-01-01", "2025-12-31", "", "", 1096},
		{"2022-12-31", "2025-12-31", "", "", telemetry.ERANGETOOLARGE, "query.from", 0},
		{"2026-11-02", "2026-11-01", "", "", telemetry.EINVALIDRANGE, "query.from", 0},
		{"", "2026-11-30", "2026-11-24", "2026-11-30", "", "", 7}, // future days are fine
		{"2026-13-01", "", "", "", telemetry.EINVALIDDATE, "query.from", 0},
		{"2026-02-30", "", "", "", telemetry.EINVALIDDATE, "query.from", 0},
		{"2026-1-05", "", "", "", telemetry.EINVALIDDATE, "query.from", 0},
		{"2026-11-01T00:00:00Z", "", "", "", telemetry.EINVALIDDATE, "query.from", 0},
		{" 2026-11-01", "", "", "", telemetry.EINVALIDDATE, "query.from", 0},
		{"", "yesterday", "", "", telemetry.EINVALIDDATE, "query.to", 0},
		{"", "2026/11/01", "", "", telemetry.EINVALIDDATE, "query.to", 0},
		{"bad", "bad", "", "", telemetry.EINVALIDDATE, "query.to", 0}, // to is read first
	}
	for _, tt := range tests {
		r, err := analytics.ParseRange(tt.from, tt.to, today)
		if tt.code != "" {
			var te *telemetry.Error
			if err == nil || telemetry.ErrorCode(err) != tt.code || !errors.As(err, &te) || te.Field != tt.field {
				t.Errorf("ParseRange(%q, %q) = %v, %v; want %s on %s", tt.from, tt.to, r, err, tt.code, tt.field)
			}
			continue
		}
		if err != nil || r.FromDate() != tt.wantFrom || r.ToDate() != tt.wantTo || r.NumDays() != tt.days {
			t.Errorf("ParseRange(%q, %q) = %s..%s (%d days), %v; want %s..%s (%d)", tt.from, tt.to,
				r.FromDate(), r.ToDate(), r.NumDays(), err, tt.wantFrom, tt.wantTo, tt.days)
		}
	}
}

func TestRangeDays(t *testing.T) {
	r, _ := analytics.ParseRange("2024-02-27", "2024-03-02", time.Now())
	days := r.Days()
	want := []string{"2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01", "2024-03-02"}
	if len(days) != len(want) {
		t.Fatalf("days = %v", days)
	}
	for i := range want {
		if days[i] != want[i] {
			t.Errorf("days = %v, want %v", days, want)
		}
	}
	lastMs := time.Date(2024, 3, 2, 23, 59, 59, 999e6, time.UTC)
	if !lastMs.Before(r.End()) || r.End().After(lastMs.Add(time.Millisecond)) {
		t.Errorf("End %v must follow 23:59:59.999 of the last day by exactly 1 ms", r.End())
	}
	before := r.Before(28)
	if before.FromDate() != "2024-01-30" || before.ToDate() != "2024-02-26" || before.NumDays() != 28 {
		t.Errorf("Before(28) = %s..%s", before.FromDate(), before.ToDate())
	}
}

// FuzzParseRange: any query strings give a valid range or a coded 4xx
// error, never a panic or an internal error.
func FuzzParseRange(f *testing.F) {
	f.Add("2026-11-01", "2026-11-07")
	f.Add("", "")
	f.Add("0000-01-01", "9999-12-31")
	f.Add("2026-02-29", "x")
	today := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to string) {
		r, err := analytics.ParseRange(from, to, today)
		if err != nil {
			switch telemetry.ErrorCode(err) {
			case telemetry.EINVALIDDATE, telemetry.EINVALIDRANGE, telemetry.ERANGETOOLARGE:
			default:
				t.Fatalf("ParseRange(%q, %q): unexpected error %v", from, to, err)
			}
			return
		}
		if n := r.NumDays(); n < 1 || n > analytics.MaxRangeDays || len(r.Days()) != n {
			t.Fatalf("ParseRange(%q, %q) = %d days", from, to, n)
		}
	})
}
