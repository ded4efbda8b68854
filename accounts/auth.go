package accounts

import "time"

// AuthPolicy tunes sessions, login protection and the ingest key cache. It
// is the one place their defaults live: the configuration starts from
// DefaultAuthPolicy, and the stores fill zero fields with the same values.
type AuthPolicy struct {
	SessionTTL         time.Duration // how long a session token lives
	LoginMaxFailures   int           // failed logins allowed per email ...
	LoginFailureWindow time.Duration // ... per this window
	// KeyCacheTTL is how long an ingest key's lookup is cached; at most
	// MaxKeyCacheTTL, since a deleted key must stop working within 5 s on
	// every instance even if nothing else works.
	KeyCacheTTL time.Duration
	// ClientMaxAttempts sign-in attempts (signup, login, invitation
	// acceptance) are allowed per client address per ClientAttemptWindow.
	ClientMaxAttempts   int
	ClientAttemptWindow time.Duration
}

// MaxTrackedClients bounds the client addresses the per-client limit
// tracks at once.
const MaxTrackedClients = 100_000

// MaxKeyCacheTTL bounds AuthPolicy.KeyCacheTTL (the contract's 5 seconds).
const MaxKeyCacheTTL = 5 * time.Second

// DefaultAuthPolicy: 30-day sessions, 5 failed logins per email per 15
// minutes, ingest keys cached 2 s, 30 sign-in attempts per client address
// per 15 minutes.
func DefaultAuthPolicy() AuthPolicy {
	return AuthPolicy{SessionTTL: 30 * 24 * time.Hour, LoginMaxFailures: 5,
		LoginFailureWindow: 15 * time.Minute, KeyCacheTTL: 2 * time.Second,
		ClientMaxAttempts: 30, ClientAttemptWindow: 15 * time.Minute}
}

// ClientLimiter returns the per-client sign-in limiter of p.
func (p AuthPolicy) ClientLimiter() *AttemptLimiter {
	p = p.WithDefaults()
	return NewAttemptLimiter(p.ClientMaxAttempts, p.ClientAttemptWindow, MaxTrackedClients)
}

// WithDefaults fills the zero (or negative) fields of p from
// DefaultAuthPolicy.
func (p AuthPolicy) WithDefaults() AuthPolicy {
	d := DefaultAuthPolicy()
	if p.SessionTTL <= 0 {
		p.SessionTTL = d.SessionTTL
	}
	if p.LoginMaxFailures <= 0 {
		p.LoginMaxFailures = d.LoginMaxFailures
	}
	if p.LoginFailureWindow <= 0 {
		p.LoginFailureWindow = d.LoginFailureWindow
	}
	if p.KeyCacheTTL <= 0 {
		p.KeyCacheTTL = d.KeyCacheTTL
	}
	if p.ClientMaxAttempts <= 0 {
		p.ClientMaxAttempts = d.ClientMaxAttempts
	}
	if p.ClientAttemptWindow <= 0 {
		p.ClientAttemptWindow = d.ClientAttemptWindow
	}
	return p
}
