package httpapi

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
)

// Verifier verifies email addresses (alerting.VerificationMailer).
type Verifier interface {
	// Start mails the verification of a new or changed address in the
	// background (nothing without an SMTP server).
	Start(ctx context.Context, userID string)
	// Resend mails a new link. Errors: ECONFLICT, ERATELIMITED.
	Resend(ctx context.Context, userID string) error
	// Verify spends a token. Errors: EINVALID (body.token).
	Verify(ctx context.Context, token string) (*accounts.Profile, error)
}

// VerifyRequest is the body of POST /v1/auth/verify.
type VerifyRequest struct {
	Token string `json:"token" minLength:"1" maxLength:"256" doc:"The token of the verification link (the part after #token= of /app/verify#token=…)." example:"evt_4fJ9kQ2mX7pL0sV3bN8cR1tY6wZ5aE2d"`
}

var verifyEmailOp = huma.Operation{
	OperationID: "verify-email",
	Summary:     "Verify an email address",
	Description: "Spends the single-use token of a verification link (the dashboard's `/app/verify` page posts it) and answers the person's profile with `email_verified` true. No session is needed: the token is the credential. A token is good for 24 hours, once, and only while the address it was sent to is still the person's; anything else is 422 `invalid` at `body.token` (ask for a new message with POST /v1/account/profile/verification). Attempts are limited per client address like sign-in (429 `rate_limited` with `Retry-After`).",
	Tags:        []string{"Authentication"},
	Errors:      []int{http.StatusUnprocessableEntity, http.StatusTooManyRequests},
}

func (s *Server) verifyEmail(ctx context.Context, in *struct{ Body VerifyRequest }) (*profileOutput, error) {
	p, err := s.opts.Verification.Verify(ctx, in.Body.Token)
	if err != nil {
		return nil, err
	}
	return newProfileOutput(p), nil
}

var resendVerificationOp = huma.Operation{
	OperationID:   "resend-verification",
	Summary:       "Send a new verification link",
	Description:   "Mails a new verification link to your address (the older link stops working) and answers 202 at once; the message is sent in the background. At most one a minute per person (counting the one sent at signup or on an email change): sooner is 429 `rate_limited` with `Retry-After`. A verified address, or an installation without an SMTP server (where addresses need no verification and no email is sent), is 409 `conflict`.",
	Tags:          []string{"Account"},
	DefaultStatus: http.StatusAccepted,
	Errors:        []int{http.StatusConflict, http.StatusTooManyRequests},
}

func (s *Server) resendVerification(ctx context.Context, _ *struct{}) (*struct{}, error) {
	return nil, s.opts.Verification.Resend(ctx, principal(ctx).UserID)
}

// ChannelTestLimits bound the test messages of POST
// /v1/account/channels/{channel}/test: each one is an outbound send.
// Counted per instance, in memory.
type ChannelTestLimits struct {
	PerPerson  int           // default 10
	PerAccount int           // default 30
	Window     time.Duration // default 1 h
}

// channelTestLimiter counts channel tests per person and per account.
type channelTestLimiter struct {
	once               sync.Once
	person, account    *accounts.AttemptLimiter
	perPerson, perAcct int
}

func (l *channelTestLimiter) init(c ChannelTestLimits) {
	l.once.Do(func() {
		if c.PerPerson <= 0 {
			c.PerPerson = 10
		}
		if c.PerAccount <= 0 {
			c.PerAccount = 30
		}
		if c.Window <= 0 {
			c.Window = time.Hour
		}
		l.perPerson, l.perAcct = c.PerPerson, c.PerAccount
		l.person = accounts.NewAttemptLimiter(c.PerPerson, c.Window, 100_000)
		l.account = accounts.NewAttemptLimiter(c.PerAccount, c.Window, 100_000)
	})
}

// allow counts one test of p, or answers ERATELIMITED with Retry-After
// when the person's or the account's budget is spent.
func (l *channelTestLimiter) allow(p *accounts.Principal) error {
	now := time.Now()
	if wait, limited := l.person.Attempt(p.UserID, now); limited {
		return testLimited(wait, "You sent %d test messages within the hour; wait before testing again.", l.perPerson)
	}
	if wait, limited := l.account.Attempt(p.AccountID, now); limited {
		l.person.Undo(p.UserID, now)
		return testLimited(wait, "This account sent %d test messages within the hour; wait before testing again.", l.perAcct)
	}
	return nil
}

func testLimited(wait time.Duration, format string, n int) error {
	e := telemetry.Errorf(telemetry.ERATELIMITED, format, n)
	e.RetryAfter = max(1, int(math.Ceil(wait.Seconds())))
	return e
}
