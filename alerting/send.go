package alerting

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpscope/telemetry"
)

// Delivery statuses of the sending channels (email, slack, discord). A
// queued delivery is due at next_attempt_at; sent and failed are final
// until an admin retries a failed one. See docs/delivery.md.
const (
	StatusSent   = "sent"
	StatusFailed = "failed"
)

// Message kinds: what a delivery announces.
const (
	KindFiring   = "firing"
	KindResolved = "resolved"
	KindTest     = "test"
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

// Message is one alert as a sender renders it. Text fields are user input
// (rule, MCP and tool names): each sender escapes them for its format.
type Message struct {
	DeliveryID string
	Kind       string // KindFiring, KindResolved, KindTest or KindVerification
	RuleID     string
	RuleName   string
	MCPID      string
	MCPName    string // "" when the MCP is gone
	// Title and Body are the delivery's stored title and body (the inbox's
	// text); Summary is the measured value against the rule, e.g.
	// "error rate 7.03% > 5%".
	Title   string
	Body    string
	Summary string
	At      time.Time
	// RuleURL and SettingsURL are links on the service's public base
	// address: the rule's page and the recipient's channel settings.
	RuleURL     string
	SettingsURL string
	// ActionURL and ActionLabel are a message's one call to action (the
	// verification link); "" for alerts.
	ActionURL   string
	ActionLabel string
}

// Envelope is one send: one destination, one message or a digest of
// several due together, under one message id.
type Envelope struct {
	Channel string
	// To is the address: an email address, or the webhook URL (a secret:
	// never logged, never stored in last_error).
	To        string
	MessageID string
	Messages  []Message
}

// Notifier sends envelopes to one kind of destination. It only builds and
// sends the payload; the outbox decides when to try again. retry reports
// whether a failure is worth trying again; err, when not nil, should be a
// *SendError so that what is recorded is short and never a secret.
type Notifier interface {
	Notify(ctx context.Context, e Envelope) (retry bool, err error)
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, e Envelope) (bool, error)

// Notify implements Notifier.
func (f NotifierFunc) Notify(ctx context.Context, e Envelope) (bool, error) { return f(ctx, e) }

// SendError is a failed send as it is recorded: Code is short and safe to
// show (it becomes last_error), never a URL, a password or a server's
// echo of either.
type SendError struct {
	Code string
	// RetryAfter is the provider's Retry-After (429), 0 when none.
	RetryAfter time.Duration
	// Revoked: the provider says the webhook no longer exists; the
	// connection is marked broken.
	Revoked bool
}

func (e *SendError) Error() string { return e.Code }

// Send error codes recorded by the outbox itself.
const (
	ErrCodeRevoked      = "webhook_revoked"
	ErrCodeNotConnected = "not_connected"
	ErrCodeNoAddress    = "no_recipient_address"
	ErrCodeTimeout      = "timeout"
	ErrCodeGaveUp       = "gave_up"
	// ErrCodeUndecryptable: the stored destination could not be opened
	// with the installation's key.
	ErrCodeUndecryptable = "undecryptable"
	// ErrCodeNotMember: the recipient left the account.
	ErrCodeNotMember = "not_a_member"
	// ErrCodeUnverified: the recipient's email address is not verified.
	ErrCodeUnverified = "address_unverified"
)

// ErrorText is what is recorded for err: the code of a *SendError, else a
// generic text (an unknown error may carry a URL).
func ErrorText(err error) string {
	var se *SendError
	if errors.As(err, &se) {
		return CleanCode(se.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrCodeTimeout
	}
	return "send_error"
}

// CleanCode keeps a provider's error token readable and harmless: lower
// case letters, digits, '_', '-', '.', ':' and spaces, at most 80 bytes.
func CleanCode(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 80 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == ':', r == ' ':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		}
	}
	if b.Len() == 0 {
		return "send_error"
	}
	return b.String()
}

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

// Ellipsis cuts s to at most n runes, ending with "…" when cut.
func Ellipsis(s string, n int) string {
	if n <= 0 {
		return ""
	}
	count := 0
	for i := range s {
		if count == n-1 {
			if len([]rune(s[i:])) > 1 {
				return s[:i] + "…"
			}
			return s
		}
		count++
	}
	return s
}

// BrokenNotice is the inbox item the admins get when a team channel's
// webhook was revoked by the provider.
func BrokenNotice(channel string) (title, body string) {
	label := channel
	if e, ok := catalogueEntry(channel); ok {
		label = e.Label
	}
	return label + " webhook revoked: alerts are not reaching your team",
		label + " answered that the webhook no longer exists (deleted, or its app or channel removed). " +
			"Deliveries to " + label + " fail with webhook_revoked until an admin connects a new webhook on the Channels page."
}
