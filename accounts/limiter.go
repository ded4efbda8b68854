package accounts

import (
	"sync"
	"time"
)

// AttemptLimiter counts attempts per key over a sliding window: failed
// logins per email (NewFailureLimiter), every sign-in attempt per client
// address (NewAttemptLimiter). It is in memory, per instance: behind N
// instances an attacker gets up to N times the budget, which still makes
// password guessing hopeless (and each guess costs an argon2 hash).
// Entries older than the window are swept.
type AttemptLimiter struct {
	max     int
	window  time.Duration
	maxKeys int // 0: no cap

	mu        sync.Mutex
	attempts  map[string][]time.Time // oldest first, at most max
	lastSweep time.Time
}

// NewFailureLimiter allows max failures per key per window; the map needs
// no cap since every entry costs its creator a password hash.
func NewFailureLimiter(max int, window time.Duration) *AttemptLimiter {
	return &AttemptLimiter{max: max, window: window, attempts: map[string][]time.Time{}}
}

// NewAttemptLimiter allows max attempts per key per window, tracking at
// most maxKeys keys: past that, a new key is refused until old ones leave
// the window (a flood from many addresses limits new addresses, not
// memory).
func NewAttemptLimiter(max int, window time.Duration, maxKeys int) *AttemptLimiter {
	l := NewFailureLimiter(max, window)
	l.maxKeys = maxKeys
	return l
}

// Attempt records a login attempt for key at now, counted as a failure
// until Succeeded is called. When max failures already fall inside the
// window it records nothing and returns how long until the oldest leaves it.
// Counting before the password is checked means concurrent guesses cannot
// slip past the limit together.
func (l *AttemptLimiter) Attempt(key string, now time.Time) (wait time.Duration, limited bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > l.window {
		l.sweep(now)
	}
	ts := l.live(key, now)
	if len(ts) >= l.max {
		return ts[0].Add(l.window).Sub(now), true
	}
	if len(ts) == 0 && l.maxKeys > 0 && len(l.attempts) >= l.maxKeys {
		if l.sweep(now); len(l.attempts) >= l.maxKeys {
			return l.window, true
		}
	}
	l.attempts[key] = append(ts, now)
	return 0, false
}

// Succeeded forgets the failures of key: the person knows the password.
func (l *AttemptLimiter) Succeeded(key string) {
	l.mu.Lock()
	delete(l.attempts, key)
	l.mu.Unlock()
}

// Undo forgets the attempt of key recorded at at: one that could not be
// judged (the store was unavailable) is no failure.
func (l *AttemptLimiter) Undo(key string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.attempts[key]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(at) {
			l.attempts[key] = append(ts[:i:i], ts[i+1:]...)
			break
		}
	}
	if len(l.attempts[key]) == 0 {
		delete(l.attempts, key)
	}
}

// live drops the attempts of key that left the window and returns the rest.
func (l *AttemptLimiter) live(key string, now time.Time) []time.Time {
	ts := l.attempts[key]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-l.window)) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.attempts, key)
	}
	return ts
}

func (l *AttemptLimiter) sweep(now time.Time) {
	for k := range l.attempts {
		l.live(k, now)
	}
	l.lastSweep = now
}
