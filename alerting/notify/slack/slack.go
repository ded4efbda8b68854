// Package slack sends alerts to a Slack incoming webhook as Block Kit
// messages with a text fallback. It only builds and posts the payload; the
// outbox decides on retries. See docs/delivery.md.
package slack

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// Slack's limits: blocks per message, characters of a header's plain
// text, of a section's text and of the fallback text we send.
const (
	MaxBlocks      = 50
	MaxHeaderChars = 150
	MaxSectionText = 3000
	MaxFallback    = 3000
)

// Payload is an incoming webhook message.
type Payload struct {
	Text   string  `json:"text"`
	Blocks []Block `json:"blocks"`
}

// Block is a Block Kit layout block (header, section, context, divider).
type Block struct {
	Type     string  `json:"type"`
	Text     *Text   `json:"text,omitempty"`
	Elements []*Text `json:"elements,omitempty"`
}

// Text is a text object: plain_text or mrkdwn.
type Text struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

// Notifier posts to Slack incoming webhooks.
type Notifier struct {
	Client *http.Client
}

var _ alerting.Notifier = (*Notifier)(nil)

// Escape makes user input inert in mrkdwn: Slack's three control
// characters are replaced by their entities, so no text can become a
// mention (<!channel>), a user or channel link, or a hidden link
// (<url|text>).
func Escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Build returns the payload of an envelope: per message a header, a
// section with the body and links, and a context line; one message or a
// digest, cut to MaxBlocks with a last block saying how many were left
// out.
func Build(e alerting.Envelope) Payload {
	var p Payload
	var fallback []string
	for i, m := range e.Messages {
		blocks := messageBlocks(m)
		if len(p.Blocks)+len(blocks)+1 > MaxBlocks-1 && i < len(e.Messages) {
			rest := len(e.Messages) - i
			p.Blocks = append(p.Blocks, Block{Type: "context", Elements: []*Text{{Type: "mrkdwn", Text: "…and " + strconv.Itoa(rest) + " more"}}})
			break
		}
		if i > 0 {
			p.Blocks = append(p.Blocks, Block{Type: "divider"})
		}
		p.Blocks = append(p.Blocks, blocks...)
		fallback = append(fallback, Escape(m.Title))
	}
	if len(e.Messages) > 1 {
		p.Text = alerting.Ellipsis(strconv.Itoa(len(e.Messages))+" alerts: "+strings.Join(fallback, "; "), MaxFallback)
	} else {
		p.Text = alerting.Ellipsis(strings.Join(fallback, ""), MaxFallback)
	}
	return p
}

func messageBlocks(m alerting.Message) []Block {
	icon := map[string]string{alerting.KindFiring: "🔴", alerting.KindResolved: "✅", alerting.KindTest: "🧪"}[m.Kind]
	header := alerting.Ellipsis(strings.TrimSpace(icon+" "+m.Title), MaxHeaderChars)
	var body strings.Builder
	body.WriteString(Escape(m.Body))
	if m.Summary != "" {
		body.WriteString("\n*" + Escape(m.Summary) + "*")
	}
	links := []string{}
	if m.RuleURL != "" {
		links = append(links, "<"+m.RuleURL+"|View the rule>")
	}
	if m.SettingsURL != "" {
		links = append(links, "<"+m.SettingsURL+"|Channel settings>")
	}
	text := alerting.Ellipsis(body.String(), MaxSectionText-200)
	if len(links) > 0 {
		text += "\n" + strings.Join(links, " · ")
	}
	ctx := "Rule *" + Escape(m.RuleName) + "*"
	if m.MCPName != "" {
		ctx += " on *" + Escape(m.MCPName) + "*"
	}
	if m.Severity != "" {
		ctx += " · severity *" + Escape(m.Severity) + "*"
	}
	if !m.At.IsZero() {
		ctx += " · <!date^" + strconv.FormatInt(m.At.Unix(), 10) + "^{date_short_pretty} {time}|" + m.At.UTC().Format("2006-01-02 15:04 UTC") + ">"
	}
	return []Block{
		{Type: "header", Text: &Text{Type: "plain_text", Text: header, Emoji: true}},
		{Type: "section", Text: &Text{Type: "mrkdwn", Text: text}},
		{Type: "context", Elements: []*Text{{Type: "mrkdwn", Text: alerting.Ellipsis(ctx, MaxSectionText)}}},
	}
}

// revokedTokens are Slack's answers for a webhook that no longer posts
// anywhere: the app or channel is gone.
var revokedTokens = map[string]bool{"no_service": true, "no_team": true, "channel_not_found": true,
	"channel_is_archived": true, "invalid_token": true, "team_disabled": true, "no_active_hooks": true}

// Notify implements alerting.Notifier. The stored URL is checked again
// with the webhook host rule before every post.
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	status, h, resp, err := notify.PostWebhook(ctx, n.Client, alerting.ChannelSlack, e.To, Build(e))
	if err != nil {
		return notify.Retryable(err), err
	}
	token := strings.TrimSpace(string(resp))
	if status == http.StatusOK {
		return false, nil
	}
	if len(token) > 40 || strings.ContainsAny(token, " {<") {
		token = ""
	}
	retry, err := notify.Retrier(status, h, token)
	if (status == http.StatusNotFound || status == http.StatusGone || status == http.StatusForbidden) && (revokedTokens[token] || status == http.StatusNotFound) {
		err.(*alerting.SendError).Revoked = true
		return false, err
	}
	return retry, err
}
