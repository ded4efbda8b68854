package notify

import (
	"time"

	"github.com/mcpscope/telemetry"
)

// Retry policy of the outbox: a transient failure is tried again after an
// exponential backoff with jitter, at most MaxAttempts times in all and for
// at most MaxRetryAge after the delivery was queued; then it is failed.
const (
	MaxAttempts = 10
	MaxRetryAge = 24 * time.Hour
	// DefaultRetryBase is the first backoff; each failure doubles it up to
	// maxBackoff.
	DefaultRetryBase = 30 * time.Second
	maxBackoff       = 4 * time.Hour
	// maxRetryAfter caps a provider's Retry-After: a hostile answer must
	// not park a delivery for days.
	maxRetryAfter = time.Hour
)

// Backoff is the wait before attempt n+1 after n failed attempts (n >= 1):
// base·2^(n-1), at most 4 h, with jitter (between half and the whole of it)
// so that deliveries failing together do not retry together.
func Backoff(n int, base time.Duration) time.Duration {
	if base <= 0 {
		base = DefaultRetryBase
	}
	return telemetry.Backoff{Base: base, Max: maxBackoff, Jitter: true}.Delay(n - 1)
}

// NextAttempt decides what follows a failed attempt: the time of the next
// one, or give up (false) when the failure is permanent, the attempts are
// used up or the delivery has been queued for MaxRetryAge.
// attempts counts this round's attempts including the failed one.
func NextAttempt(now, queuedAt time.Time, attempts int, retry bool, retryAfter, base time.Duration) (time.Time, bool) {
	if !retry || attempts >= MaxAttempts {
		return time.Time{}, false
	}
	wait := Backoff(attempts, base)
	if retryAfter > 0 {
		wait = max(wait, min(retryAfter, maxRetryAfter))
	}
	next := now.Add(wait)
	if next.Sub(queuedAt) > MaxRetryAge {
		return time.Time{}, false
	}
	return next, true
}
