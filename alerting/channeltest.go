package alerting

import (
	"context"
	"net/url"
	"time"

	"github.com/mcpscope/telemetry"
)

// TestResult is the answer of POST /v1/account/channels/{channel}/test.
type TestResult struct {
	// Status is "sent" or "failed".
	Status string `json:"status"`
	// Error is the failure's short code (never a secret); null when sent.
	Error *string `json:"error"`
}

// TestStore is what a channel test reads and writes.
type TestStore interface {
	// Destination returns where a test of channel goes for the person: the
	// person's email address, or the team channel's opened webhook URL;
	// or, when there is none to send to, the code the test fails with
	// (ErrCodeNotConnected, ErrCodeNotMember, ErrCodeUnverified,
	// ErrCodeUndecryptable).
	Destination(ctx context.Context, accountID, userID, channel string) (to, code string, err error)
	// RecordTest keeps a team channel's health after a test; a successful
	// test clears broken.
	RecordTest(ctx context.Context, accountID, channel string, at time.Time, errCode string) error
}

// ChannelTester sends a test message now: the caller's own address for
// email, the connected webhook for a team channel (the caller checks that
// an admin asks for that).
type ChannelTester struct {
	Store     TestStore
	Notifiers map[string]Notifier // the channels configured to send
	Timeout   time.Duration
	BaseURL   string
}

// TestChannel sends the test. Returns ENOTFOUND (unknown channel) and
// EINVALID (in_app, which needs no test); a channel that does not send,
// is not connected or fails answers a TestResult with status failed.
func (t *ChannelTester) TestChannel(ctx context.Context, accountID, userID, channel string) (TestResult, error) {
	if !ValidChannel(channel) {
		return TestResult{}, telemetry.Errorf(telemetry.ENOTFOUND, "Unknown channel %q.", channel)
	}
	if channel == ChannelInApp {
		return TestResult{}, telemetry.FieldError(telemetry.EINVALID, "path.channel", "in_app needs no test: its alerts are in your inbox.")
	}
	n, ok := t.Notifiers[channel]
	if !ok {
		return failed("sending_not_configured"), nil
	}
	to, code, err := t.Store.Destination(ctx, accountID, userID, channel)
	if err != nil {
		return TestResult{}, err
	}
	if code != "" {
		return failed(code), nil
	}
	if to == "" {
		if IsTeamChannel(channel) {
			return failed(ErrCodeNotConnected), nil
		}
		return failed(ErrCodeNoAddress), nil
	}
	now := time.Now().UTC()
	e := Envelope{Channel: channel, To: to, MessageID: NewMessageID(), Messages: []Message{{
		Kind: KindTest, Title: "Test message from telemetryd",
		Body: "This is a test: alerts of your rules will arrive here.", At: now,
		SettingsURL: t.link("/app/channels"),
	}}}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	_, serr := n.Notify(sctx, e)
	if serr != nil && sctx.Err() == context.DeadlineExceeded {
		serr = &SendError{Code: ErrCodeTimeout}
	}
	cancel()
	code = ""
	if serr != nil {
		code = ErrorText(serr)
	}
	if IsTeamChannel(channel) {
		if err := t.Store.RecordTest(context.WithoutCancel(ctx), accountID, channel, now, code); err != nil {
			return TestResult{}, err
		}
	}
	if serr != nil {
		return failed(code), nil
	}
	return TestResult{Status: StatusSent}, nil
}

func failed(code string) TestResult { return TestResult{Status: StatusFailed, Error: &code} }

func (t *ChannelTester) link(path string) string {
	if t.BaseURL == "" {
		return ""
	}
	return t.BaseURL + path
}

// Links returns the rule page and channel settings links of a delivery on
// the service's public base address ("" when none is configured).
func Links(baseURL string, m Message) (rule, settings string) {
	if baseURL == "" {
		return "", ""
	}
	if m.MCPID != "" && m.RuleID != "" {
		rule = baseURL + "/app/mcps/" + url.PathEscape(m.MCPID) + "/alerts/" + url.PathEscape(m.RuleID)
	}
	return rule, baseURL + "/app/channels"
}

// TestService sends test messages (ChannelTester implements it).
type TestService interface {
	TestChannel(ctx context.Context, accountID, userID, channel string) (TestResult, error)
}

var _ TestService = (*ChannelTester)(nil)
