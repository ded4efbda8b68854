// Package webhook sends alerts as signed JSON events to any HTTPS URL an
// account chooses, so that they reach what has no integration (Mattermost,
// n8n, incident.io, a team's own bot). Requests are signed per the
// Standard Webhooks specification (webhook-id, webhook-timestamp,
// webhook-signature: v1, HMAC-SHA256 of id.timestamp.body). Because the
// URL is anyone's, this is where server-side request forgery is easiest:
// the host may not be or resolve to an internal address, checked at
// connect time and again by the dialer at every send (unless an outbound
// proxy is configured), redirects are not followed, the answer is read up
// to 4 KiB and a send gets SendTimeout. See docs/delivery.md.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// ID is the channel id (pinned).
const ID = "webhook"

// SendTimeout bounds one request, shorter than the outbox's timeout: a
// receiver should answer at once and do its work later.
const SendTimeout = 5 * time.Second

// RotationGrace is how long the previous secret keeps signing after a
// rotation, beside the new one.
const RotationGrace = 24 * time.Hour

// SecretPrefix starts every signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// stored is the sealed connection: the URL and the signing secrets.
type stored struct {
	URL           string    `json:"url"`
	Secret        string    `json:"secret"`
	Previous      string    `json:"previous,omitempty"`
	PreviousUntil time.Time `json:"previous_until,omitzero"`
}

// NewSecret returns a fresh signing secret: whsec_ and 24 random bytes in
// base64.
func NewSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// Sign returns the v1 signature of a request: base64 of HMAC-SHA256, keyed
// with the base64-decoded part of the secret after whsec_, over
// "id.timestamp.body".
func Sign(secret, id string, ts int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", errors.New("webhook: malformed secret")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// signatures is the webhook-signature header: the current secret's, and
// the previous one's during RotationGrace, space separated.
func (s stored) signatures(id string, ts int64, body []byte, now time.Time) (string, error) {
	sig, err := Sign(s.Secret, id, ts, body)
	if err != nil {
		return "", err
	}
	if s.Previous != "" && now.Before(s.PreviousUntil) {
		prev, err := Sign(s.Previous, id, ts, body)
		if err != nil {
			return "", err
		}
		sig += " " + prev
	}
	return sig, nil
}

// Notifier posts signed events.
type Notifier struct {
	Client *http.Client
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

var _ alerting.Notifier = (*Notifier)(nil)

// Notify implements alerting.Notifier: one request per message, each with
// its delivery's id as webhook-id (the same on a retry).
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	var s stored
	if err := json.Unmarshal([]byte(e.To), &s); err != nil || s.URL == "" {
		return false, &alerting.SendError{Code: "connection_unreadable"}
	}
	if _, err := checkURL(s.URL); err != nil {
		return false, &alerting.SendError{Code: "webhook_host_not_allowed"}
	}
	for _, m := range e.Messages {
		ev := Build(m)
		if ev.ID == "" {
			ev.ID = e.MessageID
		}
		if retry, err := n.post(ctx, s, ev); err != nil {
			return retry, err
		}
	}
	return false, nil
}

func (n *Notifier) post(ctx context.Context, s stored, ev Event) (bool, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return false, &alerting.SendError{Code: "payload_error"}
	}
	now := time.Now()
	if n.Now != nil {
		now = n.Now()
	}
	ts := now.Unix()
	sig, err := s.signatures(ev.ID, ts, body, now)
	if err != nil {
		return false, &alerting.SendError{Code: "connection_unreadable"}
	}
	h := http.Header{"Webhook-Id": {ev.ID}, "Webhook-Timestamp": {strconv.FormatInt(ts, 10)}, "Webhook-Signature": {sig}}
	sctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	status, rh, _, err := notify.PostJSONHeaders(sctx, n.Client, s.URL, body, h)
	if err != nil {
		return notify.Retryable(err), err
	}
	// The receiver's body is never recorded: it is anyone's text.
	retry, rerr := notify.Retrier(status, rh, "")
	if rerr == nil {
		return false, nil
	}
	if status == http.StatusGone {
		rerr.(*alerting.SendError).Revoked = true
		return false, rerr
	}
	return retry, rerr
}
