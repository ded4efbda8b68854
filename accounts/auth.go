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
}

// MaxKeyCacheTTL bounds AuthPolicy.KeyCacheTTL (the contract's 5 seconds).
const MaxKeyCacheTTL = 5 * time.Second

// DefaultAuthPolicy: 30-day sessions, 5 failed logins per email per 15
// minutes, ingest keys cached 2 s.
func DefaultAuthPolicy() AuthPolicy {
	return AuthPolicy{SessionTTL: 30 * 24 * time.Hour, LoginMaxFailures: 5,
		LoginFailureWindow: 15 * time.Minute, KeyCacheTTL: 2 * time.Second}
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
	return p
}
