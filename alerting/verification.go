package alerting

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
)

// KindVerification is the message that asks a person to confirm their
// email address; it is the only email an unverified address gets.
const KindVerification = "verification"

// VerificationMailer mails the verification links of new and changed
// addresses through the email sender, directly (not through the outbox:
// a lost message is asked for again from the profile, at most once a
// minute). With no SMTP server configured it sends nothing and email
// delivery is not gated (no email is sent at all). See docs/delivery.md.
type VerificationMailer struct {
	Store accounts.VerificationService
	// Notifier is the email sender; nil when no SMTP server is configured.
	Notifier Notifier
	// BaseURL is the service's public base address: the link is
	// BaseURL/app/verify#token=….
	BaseURL string
	Timeout time.Duration // one send, default 10 s
	Log     *slog.Logger

	wg sync.WaitGroup
}

// Enabled reports whether addresses are verified (an SMTP server is
// configured).
func (v *VerificationMailer) Enabled() bool { return v != nil && v.Notifier != nil }

// Start begins the verification of a new or changed address and mails it
// in the background; failures are logged (the person can ask again).
func (v *VerificationMailer) Start(ctx context.Context, userID string) {
	if !v.Enabled() {
		return
	}
	pv, err := v.Store.StartVerification(ctx, userID, false)
	if err != nil {
		if telemetry.ErrorCode(err) != telemetry.ECONFLICT {
			v.log().Warn("verification: starting failed", "user", userID, "error", err)
		}
		return
	}
	v.mail(ctx, pv)
}

// Resend mails a new link for the person's unverified address, in the
// background. Errors: ECONFLICT (verified already, or no SMTP server);
// ERATELIMITED with RetryAfter (one a minute).
func (v *VerificationMailer) Resend(ctx context.Context, userID string) error {
	if !v.Enabled() {
		return telemetry.Errorf(telemetry.ECONFLICT, "No email server is configured: addresses need no verification.")
	}
	pv, err := v.Store.StartVerification(ctx, userID, true)
	if err != nil {
		return err
	}
	v.mail(ctx, pv)
	return nil
}

// Verify spends a token (accounts.VerificationService.Verify).
func (v *VerificationMailer) Verify(ctx context.Context, token string) (*accounts.Profile, error) {
	return v.Store.Verify(ctx, token)
}

// Wait waits for the messages being sent.
func (v *VerificationMailer) Wait() { v.wg.Wait() }

func (v *VerificationMailer) log() *slog.Logger {
	if v.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return v.Log
}

func (v *VerificationMailer) mail(ctx context.Context, pv *accounts.PendingVerification) {
	timeout := v.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	e := Envelope{Channel: ChannelEmail, To: pv.Email, MessageID: NewMessageID(), Messages: []Message{VerificationMessage(v.BaseURL, pv)}}
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if _, err := v.Notifier.Notify(sctx, e); err != nil {
			v.log().Warn("verification: sending failed", "user", pv.UserID, "error", ErrorText(err))
		}
	}()
}

// VerificationMessage is the verification email of pv: its link opens the
// dashboard's verify page, which posts the token (kept in the fragment, so
// that no server log sees it) to POST /v1/auth/verify.
func VerificationMessage(baseURL string, pv *accounts.PendingVerification) Message {
	return Message{
		Kind:  KindVerification,
		Title: "Confirm your email address",
		// No text of the signup (name, account name) is quoted: whoever
		// gave the address chooses nothing in the only message it gets.
		Body: "Someone, hopefully you, gave this address to telemetryd. " +
			"Open the link below within 24 hours to confirm it; until then no alert is sent to it. " +
			"If it was not you, ignore this message: nothing else will be sent to this address.",
		At:          time.Now().UTC(),
		ActionURL:   baseURL + "/app/verify#token=" + url.QueryEscape(pv.Token),
		ActionLabel: "Confirm your address",
	}
}
