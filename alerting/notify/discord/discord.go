// Package discord sends alerts to a Discord channel webhook as embeds (red
// while firing, green when resolved) that mention nobody. It only builds
// and posts the payload; the outbox decides on retries. See
// docs/delivery.md.
package discord

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// Discord's limits on a webhook message.
const (
	MaxContent     = 2000
	MaxEmbeds      = 10
	MaxTitle       = 256
	MaxDescription = 4096
	MaxFieldName   = 256
	MaxFieldValue  = 1024
	// fieldCap is what this sender puts in a field: with a full title and
	// description, three fields still fit in MaxEmbedTotal.
	fieldCap  = 256
	MaxFooter = 2048
	// MaxEmbedTotal is the sum of the text of every embed of a message.
	MaxEmbedTotal = 6000
)

// Embed colours.
const (
	ColorFiring   = 0xE01E5A
	ColorResolved = 0x2EB67D
	ColorTest     = 0x5865F2
)

// Payload is an execute-webhook body.
type Payload struct {
	Content         string          `json:"content,omitempty"`
	Username        string          `json:"username,omitempty"`
	Embeds          []Embed         `json:"embeds"`
	AllowedMentions AllowedMentions `json:"allowed_mentions"`
}

// AllowedMentions with an empty Parse list lets the message ping nobody,
// whatever its text says.
type AllowedMentions struct {
	Parse []string `json:"parse"`
}

// Embed is a rich embed.
type Embed struct {
	Title       string  `json:"title"`
	Description string  `json:"description,omitempty"`
	URL         string  `json:"url,omitempty"`
	Color       int     `json:"color"`
	Fields      []Field `json:"fields,omitempty"`
	Footer      *Footer `json:"footer,omitempty"`
	Timestamp   string  `json:"timestamp,omitempty"`
}

// Field is an embed field.
type Field struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline,omitempty"`
}

// Footer is an embed's footer.
type Footer struct {
	Text string `json:"text"`
}

// Notifier posts to Discord webhooks.
type Notifier struct {
	Client *http.Client
}

var _ alerting.Notifier = (*Notifier)(nil)

var escaper = strings.NewReplacer(
	`\`, `\\`, `*`, `\*`, `_`, `\_`, `~`, `\~`, "`", "\\`", `|`, `\|`, `>`, `\>`, `<`, `\<`,
	`#`, `\#`, `-`, `\-`, `[`, `\[`, `]`, `\]`, `(`, `\(`, `)`, `\)`, `:`, `\:`,
	// A zero-width space after @ keeps @everyone and @here from reading as
	// mentions even where allowed_mentions is ignored.
	`@`, "@\u200b",
)

// Escape makes user input plain text in Discord markdown: no emphasis, no
// masked (hidden) link, no mention, no heading or quote.
func Escape(s string) string { return escaper.Replace(s) }

// Build returns the payload of an envelope: one embed per message (at most
// MaxEmbeds, the last saying how many were left out), each within
// Discord's limits, cut with an ellipsis.
func Build(e alerting.Envelope) Payload {
	p := Payload{Username: "Telemetry alerts", Embeds: []Embed{}, AllowedMentions: AllowedMentions{Parse: []string{}}}
	total := 0
	for i, m := range e.Messages {
		if i == MaxEmbeds-1 && len(e.Messages) > MaxEmbeds {
			p.Content = strconv.Itoa(len(e.Messages)-i) + " more alerts are not shown."
			break
		}
		em := embed(m)
		size := embedSize(em)
		if total+size > MaxEmbedTotal {
			p.Content = strconv.Itoa(len(e.Messages)-i) + " more alerts are not shown."
			break
		}
		total += size
		p.Embeds = append(p.Embeds, em)
	}
	if len(e.Messages) > 1 {
		p.Content = alerting.Ellipsis(strings.TrimSpace(strconv.Itoa(len(e.Messages))+" alerts. "+p.Content), MaxContent)
	}
	return p
}

func embed(m alerting.Message) Embed {
	em := Embed{Title: alerting.Ellipsis(Escape(m.Title), MaxTitle), URL: m.RuleURL}
	switch m.Kind {
	case alerting.KindFiring:
		em.Color = ColorFiring
	case alerting.KindResolved:
		em.Color = ColorResolved
	default:
		em.Color = ColorTest
	}
	desc := Escape(m.Body)
	if m.SettingsURL != "" {
		desc = alerting.Ellipsis(desc, MaxDescription-200) + "\n[Channel settings](" + m.SettingsURL + ")"
	}
	em.Description = alerting.Ellipsis(desc, MaxDescription)
	if m.Summary != "" {
		em.Fields = append(em.Fields, Field{Name: "Measured", Value: alerting.Ellipsis(Escape(m.Summary), fieldCap)})
	}
	if m.MCPName != "" {
		em.Fields = append(em.Fields, Field{Name: "MCP", Value: alerting.Ellipsis(Escape(m.MCPName), fieldCap), Inline: true})
	}
	if m.RuleName != "" {
		em.Fields = append(em.Fields, Field{Name: "Rule", Value: alerting.Ellipsis(Escape(m.RuleName), fieldCap), Inline: true})
	}
	if m.Severity != "" {
		em.Fields = append(em.Fields, Field{Name: "Severity", Value: Escape(m.Severity), Inline: true})
	}
	if !m.At.IsZero() {
		em.Timestamp = m.At.UTC().Format(time.RFC3339)
	}
	em.Footer = &Footer{Text: "telemetryd"}
	return em
}

func embedSize(e Embed) int {
	n := len([]rune(e.Title)) + len([]rune(e.Description))
	for _, f := range e.Fields {
		n += len([]rune(f.Name)) + len([]rune(f.Value))
	}
	if e.Footer != nil {
		n += len([]rune(e.Footer.Text))
	}
	return n
}

// apiError is Discord's error body.
type apiError struct {
	Message    string  `json:"message"`
	Code       int     `json:"code"`
	RetryAfter float64 `json:"retry_after"`
}

// Notify implements alerting.Notifier. The stored URL is checked again
// with the webhook host rule before every post. 404 (Unknown Webhook) and
// 401 (Invalid Webhook Token) mean the webhook was deleted: revoked.
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	status, h, resp, err := notify.PostWebhook(ctx, n.Client, alerting.ChannelDiscord, e.To, Build(e))
	if err != nil {
		return notify.Retryable(err), err
	}
	var ae apiError
	_ = json.Unmarshal(resp, &ae)
	token := ""
	if ae.Code != 0 {
		token = strconv.Itoa(ae.Code) + " " + ae.Message
	}
	retry, rerr := notify.Retrier(status, h, token)
	if rerr == nil {
		return false, nil
	}
	se := rerr.(*alerting.SendError)
	if status == http.StatusTooManyRequests && ae.RetryAfter > 0 {
		se.RetryAfter = max(se.RetryAfter, time.Duration(ae.RetryAfter*float64(time.Second)))
	}
	if status == http.StatusNotFound || status == http.StatusUnauthorized || ae.Code == 10015 || ae.Code == 50027 {
		se.Revoked = true
		return false, se
	}
	return retry, se
}
