package ingest

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimiter allows each ingest key a number of payloads per minute, as a
// token bucket holding one minute's allowance. A refused payload learns the
// exact wait until the next token.
type RateLimiter struct {
	perMinute int
	mu        sync.Mutex
	keys      map[string]*limiterEntry
	lastSweep time.Time
}

type limiterEntry struct {
	lim  *rate.Limiter
	last time.Time
}

// NewRateLimiter allows perMinute payloads per key per minute.
func NewRateLimiter(perMinute int) *RateLimiter {
	return &RateLimiter{perMinute: perMinute, keys: map[string]*limiterEntry{}}
}

// Allow takes one payload's token for key, or returns how long to wait.
func (r *RateLimiter) Allow(key string, now time.Time) (ok bool, wait time.Duration) {
	return r.take(key, now, false)
}

// Exhausted reports, without taking a token, whether key has none left and
// how long until it has one.
func (r *RateLimiter) Exhausted(key string, now time.Time) (bool, time.Duration) {
	ok, wait := r.take(key, now, true)
	return !ok, wait
}

func (r *RateLimiter) take(key string, now time.Time, peek bool) (ok bool, wait time.Duration) {
	r.mu.Lock()
	e := r.keys[key]
	if e == nil {
		e = &limiterEntry{lim: rate.NewLimiter(rate.Limit(float64(r.perMinute)/60), r.perMinute)}
		r.keys[key] = e
	}
	e.last = now
	if now.Sub(r.lastSweep) > 10*time.Minute {
		// Idle keys hold a full bucket again after a minute; forget them.
		for k, v := range r.keys {
			if now.Sub(v.last) > 2*time.Minute {
				delete(r.keys, k)
			}
		}
		r.lastSweep = now
	}
	r.mu.Unlock()
	res := e.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	if peek {
		res.CancelAt(now)
	}
	return true, 0
}
