package alerting

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"
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
	// Severity is the rule's severity when the delivery was made.
	Severity string
	// EpisodeAt is when the firing episode the delivery belongs to began
	// (the rule's last_fired_at): a firing, its re-notifications and its
	// resolve share it. Zero for a test.
	EpisodeAt time.Time
	// Details are the rule's numbers (zero for a test or a notice).
	Details Details
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
	label, noun := channel, "webhook"
	if in, ok := LookupIntegration(channel); ok {
		label = in.Label
		if in.Connection != nil && !in.Connection.URLKind && channel != "webhook" {
			noun = "connection"
		}
	}
	return label + " " + noun + " revoked: alerts are not reaching your team",
		label + " answered that the " + noun + " no longer exists (deleted, or its app, integration or channel removed). " +
			"Deliveries to " + label + " fail with webhook_revoked until an admin connects it again on the Channels page."
}

// NewMessageID returns a fresh message id ("msg_" and 24 hex digits): one
// per envelope, shared by the deliveries of a digest; email uses it in its
// Message-ID header.
func NewMessageID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "msg_" + hex.EncodeToString(b[:])
}
