package accounts

import (
	"context"
	"time"
)

// Email verification: with an SMTP server configured, no email but the
// verification message goes to an address until its owner opens the
// message's link (docs/delivery.md). The link carries a single-use token
// that expires after VerificationTTL; a person may ask for a new message
// once per VerificationResendInterval.
const (
	VerificationTTL            = 24 * time.Hour
	VerificationResendInterval = time.Minute
)

// PendingVerification is a fresh verification to mail: the secret token
// (shown only in the message) for the person's current address.
type PendingVerification struct {
	UserID    string
	Email     string
	Name      string
	Token     string
	ExpiresAt time.Time
}

// VerificationService keeps who proved their address.
type VerificationService interface {
	// StartVerification makes a new token for the person's current
	// address, replacing any older one, and returns it to be mailed.
	// With resend, a verification started less than
	// VerificationResendInterval ago refuses: ERATELIMITED with RetryAfter.
	// Errors: ECONFLICT when the address is verified already; ENOTFOUND.
	StartVerification(ctx context.Context, userID string, resend bool) (*PendingVerification, error)
	// Verify uses a token: the address it was made for is verified, if it
	// is still the person's, and the token is spent. Returns the person's
	// profile.
	// Errors: EINVALID (body.token) for an unknown, used, expired or
	// outdated (the address changed since) token.
	Verify(ctx context.Context, token string) (*Profile, error)
}
