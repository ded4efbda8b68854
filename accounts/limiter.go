package accounts

import (
	"sync"
	"time"
)

// LoginLimiter counts failed logins per email over a sliding window. It is
// in memory, per instance: behind N instances an attacker gets up to N times
// the budget, which still makes password guessing hopeless (and each guess
// costs an argon2 hash). The map needs no cap: every entry costs its
// creator a password hash, and entries older than the window are swept.
type LoginLimiter struct {
	max    int
	window time.Duration

	mu        sync.Mutex
	attempts  map[string][]time.Time // oldest first, at most max
	lastSweep time.Time
}

// NewLoginLimiter allows max failures per key per window.
func NewLoginLimiter(max int, window time.Duration) *LoginLimiter {
	return &LoginLimiter{max: max, window: window, attempts: map[string][]time.Time{}}
}

// Attempt records a login attempt for key at now, counted as a failure
// until Succeeded is called. When max failures already fall inside the
// window it records nothing and returns how long until the oldest leaves it.
// Counting before the password is checked means concurrent guesses cannot
// slip past the limit together.
func (l *LoginLimiter) Attempt(key string, now time.Time) (wait time.Duration, limited bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > l.window {
		l.sweep(now)
	}
	ts := l.live(key, now)
	if len(ts) >= l.max {
		return ts[0].Add(l.window).Sub(now), true
	}
	l.attempts[key] = append(ts, now)
	return 0, false
}

// Succeeded forgets the failures of key: the person knows the password.
func (l *LoginLimiter) Succeeded(key string) {
	l.mu.Lock()
	delete(l.attempts, key)
	l.mu.Unlock()
}

// live drops the attempts of key that left the window and returns the rest.
func (l *LoginLimiter) live(key string, now time.Time) []time.Time {
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

func (l *LoginLimiter) sweep(now time.Time) {
	for k := range l.attempts {
		l.live(k, now)
	}
	l.lastSweep = now
}
