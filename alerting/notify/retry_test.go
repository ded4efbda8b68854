package notify

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	base := 30 * time.Second
	for n := 1; n <= 12; n++ {
		full := min(base<<(n-1), 4*time.Hour)
		for i := 0; i < 50; i++ {
			if d := Backoff(n, base); d < full/2 || d > full {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", n, d, full/2, full)
			}
		}
	}
}

func TestNextAttempt(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		queued     time.Time
		attempts   int
		retry      bool
		retryAfter time.Duration
		want       bool
		atLeast    time.Duration
	}{
		{"transient", now, 1, true, 0, true, 15 * time.Second},
		{"permanent", now, 1, false, 0, false, 0},
		{"attempts used up", now, MaxAttempts, true, 0, false, 0},
		{"last allowed", now, MaxAttempts - 1, true, 0, true, 0},
		{"retry-after honoured", now, 1, true, 10 * time.Minute, true, 10 * time.Minute},
		{"retry-after capped", now, 1, true, 48 * time.Hour, true, time.Hour},
		{"past 24 h", now.Add(-23*time.Hour - 59*time.Minute), 5, true, 0, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, ok := NextAttempt(now, tt.queued, tt.attempts, tt.retry, tt.retryAfter, DefaultRetryBase)
			if ok != tt.want {
				t.Fatalf("ok = %v, want %v", ok, tt.want)
			}
			if ok && next.Sub(now) < tt.atLeast {
				t.Errorf("next in %s, want at least %s", next.Sub(now), tt.atLeast)
			}
			if ok && next.Sub(now) > 4*time.Hour+time.Second {
				t.Errorf("next in %s: beyond every cap", next.Sub(now))
			}
		})
	}
}
