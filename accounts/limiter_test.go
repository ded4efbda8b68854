package accounts

import (
	"testing"
	"time"
)

// An attempt undone (it could not be judged) is no failure: the limit
// still allows max judged failures.
func TestAttemptLimiterUndo(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	l := NewFailureLimiter(2, time.Minute)
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Second)
		if _, limited := l.Attempt("e", at); limited {
			t.Fatalf("attempt %d limited although every attempt was undone", i)
		}
		l.Undo("e", at)
	}
	l.Attempt("e", t0.Add(20*time.Second))
	l.Attempt("e", t0.Add(21*time.Second))
	if _, limited := l.Attempt("e", t0.Add(22*time.Second)); !limited {
		t.Fatal("two judged failures did not reach the limit of 2")
	}
}
