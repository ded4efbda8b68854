// Package googlechat sends alerts to a Google Chat space webhook as a card
// message (cardsV2). No user text reaches the message's text field, where
// <users/…> would mention people; in the card it is HTML-escaped, so it
// cannot mention, link or format. It only builds and posts the message;
// the outbox decides on retries. See docs/delivery.md.
package googlechat

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"text/template"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// ID is the channel id (pinned).
const ID = "google_chat"

// MaxCards bounds the cards of one digest message.
const MaxCards = 10

// Message is a Chat message with cards.
type Message struct {
	Text    string   `json:"text"`
	CardsV2 []CardV2 `json:"cardsV2"`
}

// CardV2 is one card with its id.
type CardV2 struct {
	CardID string `json:"cardId"`
	Card   Card   `json:"card"`
}

// Card is a card: a header and sections of widgets.
type Card struct {
	Header   Header    `json:"header"`
	Sections []Section `json:"sections"`
}

// Header is a card's header.
type Header struct {
	Title    string `json:"title"`
	Subtitle string `json:"subtitle,omitempty"`
}

// Section holds widgets.
type Section struct {
	Widgets []Widget `json:"widgets"`
}

// Widget is one of decoratedText, textParagraph or buttonList.
type Widget struct {
	DecoratedText *DecoratedText `json:"decoratedText,omitempty"`
	TextParagraph *TextParagraph `json:"textParagraph,omitempty"`
	ButtonList    *ButtonList    `json:"buttonList,omitempty"`
}

// DecoratedText is a labelled value.
type DecoratedText struct {
	TopLabel string `json:"topLabel"`
	Text     string `json:"text"`
}

// TextParagraph is a paragraph (a subset of HTML is formatted).
type TextParagraph struct {
	Text string `json:"text"`
}

// ButtonList holds buttons.
type ButtonList struct {
	Buttons []Button `json:"buttons"`
}

// Button opens a link.
type Button struct {
	Text    string  `json:"text"`
	OnClick OnClick `json:"onClick"`
}

// OnClick of a button.
type OnClick struct {
	OpenLink OpenLink `json:"openLink"`
}

// OpenLink is a URL to open.
type OpenLink struct {
	URL string `json:"url"`
}

// Escape makes user text inert in card text, which formats a subset of
// HTML and turns <users/…> into mentions: <, > and & become entities.
func Escape(s string) string { return html.EscapeString(s) }

var texts = template.Must(template.New("googlechat").Funcs(template.FuncMap{"esc": Escape}).Parse(`
{{- define "text"}}{{if eq .Kind "resolved"}}✅ Resolved{{else if eq .Kind "test"}}🧪 Test{{else}}🔴 Firing{{end}}{{if .Severity}} ({{.Severity}}){{end}}: telemetryd alert{{end}}
{{- define "title"}}{{.Title}}{{end}}
{{- define "body"}}{{esc .Body}}{{if .Summary}}<br><b>{{esc .Summary}}</b>{{end}}{{end}}
{{- define "rule"}}{{esc .RuleName}}{{if .MCPName}} on {{esc .MCPName}}{{end}}{{end}}
`))

// Build returns the message of an envelope: one card per message (at most
// MaxCards). The text field carries no user input.
func Build(e alerting.Envelope) Message {
	msg := Message{CardsV2: []CardV2{}}
	var lines []string
	for i, m := range e.Messages {
		if i == MaxCards {
			break
		}
		if m.Kind != alerting.KindTest && m.Severity == "" {
			m.Severity = alerting.SeverityError
		}
		lines = append(lines, notify.Render(texts, "text", m))
		msg.CardsV2 = append(msg.CardsV2, CardV2{CardID: "alert-" + m.DeliveryID, Card: card(m)})
	}
	msg.Text = strings.Join(lines, "\n")
	return msg
}

func card(m alerting.Message) Card {
	// Header titles are plain text (not formatted, no mentions).
	c := Card{Header: Header{Title: alerting.Ellipsis(notify.Render(texts, "title", m), 200), Subtitle: "telemetryd"}}
	widgets := []Widget{{TextParagraph: &TextParagraph{Text: alerting.Ellipsis(notify.Render(texts, "body", m), 4000)}}}
	if m.Kind != alerting.KindTest {
		widgets = append(widgets,
			Widget{DecoratedText: &DecoratedText{TopLabel: "Severity", Text: m.Severity}},
			Widget{DecoratedText: &DecoratedText{TopLabel: "Rule", Text: alerting.Ellipsis(notify.Render(texts, "rule", m), 500)}})
	}
	if !m.At.IsZero() {
		widgets = append(widgets, Widget{DecoratedText: &DecoratedText{TopLabel: "At", Text: m.At.UTC().Format(time.RFC1123)}})
	}
	var buttons []Button
	if m.RuleURL != "" {
		buttons = append(buttons, Button{Text: "View the rule", OnClick: OnClick{OpenLink{m.RuleURL}}})
	}
	if m.SettingsURL != "" {
		buttons = append(buttons, Button{Text: "Channel settings", OnClick: OnClick{OpenLink{m.SettingsURL}}})
	}
	if len(buttons) > 0 {
		widgets = append(widgets, Widget{ButtonList: &ButtonList{Buttons: buttons}})
	}
	c.Sections = []Section{{Widgets: widgets}}
	return c
}

// Notifier posts to Google Chat space webhooks.
type Notifier struct {
	Client *http.Client
}

var _ alerting.Notifier = (*Notifier)(nil)

// apiError is Google's error body.
type apiError struct {
	Error struct {
		Status string `json:"status"`
	} `json:"error"`
}

// Notify implements alerting.Notifier. The stored URL is checked again
// before every post. 404 (the space or webhook is gone) and 401/403 (its
// key or token revoked) mean the webhook is gone: revoked.
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	if _, err := checkURL(e.To); err != nil {
		return false, &alerting.SendError{Code: "webhook_host_not_allowed"}
	}
	body, err := json.Marshal(Build(e))
	if err != nil {
		return false, &alerting.SendError{Code: "payload_error"}
	}
	status, h, resp, err := notify.PostJSON(ctx, n.Client, e.To, body)
	if err != nil {
		return notify.Retryable(err), err
	}
	var ae apiError
	_ = json.Unmarshal(resp, &ae)
	retry, rerr := notify.Retrier(status, h, ae.Error.Status)
	if rerr == nil {
		return false, nil
	}
	if status == http.StatusNotFound || status == http.StatusUnauthorized || status == http.StatusForbidden {
		rerr.(*alerting.SendError).Revoked = true
		return false, rerr
	}
	return retry, rerr
}
