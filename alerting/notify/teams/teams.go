// Package teams sends alerts to Microsoft Teams through a Workflows
// webhook ("Post to a channel when a webhook request is received") as an
// Adaptive Card: coloured by state and severity, the rule's facts, a link
// to the rule. The Office 365 connectors (webhook.office.com) were retired
// and are refused. It only builds and posts the card; the outbox decides
// on retries. See docs/delivery.md.
package teams

import (
	"context"
	"net/http"
	"strings"
	"text/template"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// ID is the channel id (pinned).
const ID = "teams"

// SchemaVersion is the Adaptive Card version sent: 1.4 renders in every
// Teams client.
const (
	SchemaURL     = "http://adaptivecards.io/schemas/adaptive-card.json"
	SchemaVersion = "1.4"
	// MaxCards bounds the cards of one digest message.
	MaxCards = 10
)

// Message is the webhook body: a message with Adaptive Card attachments.
type Message struct {
	Type        string       `json:"type"`
	Attachments []Attachment `json:"attachments"`
}

// Attachment carries one card.
type Attachment struct {
	ContentType string  `json:"contentType"`
	ContentURL  *string `json:"contentUrl"`
	Content     Card    `json:"content"`
}

// Card is an Adaptive Card.
type Card struct {
	Schema  string    `json:"$schema"`
	Type    string    `json:"type"`
	Version string    `json:"version"`
	MSTeams MSTeams   `json:"msteams"`
	Body    []Element `json:"body"`
	Actions []Action  `json:"actions,omitempty"`
}

// MSTeams holds Teams' card options.
type MSTeams struct {
	Width string `json:"width"`
}

// Element is a card element: Container, TextBlock or FactSet.
type Element struct {
	Type   string    `json:"type"`
	Style  string    `json:"style,omitempty"`
	Bleed  bool      `json:"bleed,omitempty"`
	Items  []Element `json:"items,omitempty"`
	Text   string    `json:"text,omitempty"`
	Weight string    `json:"weight,omitempty"`
	Size   string    `json:"size,omitempty"`
	Color  string    `json:"color,omitempty"`
	Wrap   bool      `json:"wrap,omitempty"`
	Facts  []Fact    `json:"facts,omitempty"`
}

// Fact is a FactSet row.
type Fact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// Action is an Action.OpenUrl.
type Action struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

var escaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `(`, `\(`, `)`, `\)`,
	"`", "\\`", `#`, `\#`, `>`, `\>`, `<`, `\<`, `~`, `\~`, `|`, `\|`, `-`, `\-`, `+`, `\+`)

// Escape makes user text plain in a TextBlock's Markdown subset: no link,
// emphasis, heading or list. A mention needs an entity in msteams.entities,
// which is never sent, so no text can mention anyone.
func Escape(s string) string { return escaper.Replace(s) }

var texts = template.Must(template.New("teams").Funcs(template.FuncMap{"esc": Escape}).Parse(`
{{- define "title"}}{{esc .Title}}{{end}}
{{- define "body"}}{{esc .Body}}{{end}}
{{- define "rule"}}{{esc .RuleName}}{{end}}
{{- define "mcp"}}{{esc .MCPName}}{{end}}
{{- define "measured"}}{{esc .Summary}}{{end}}
`))

// style returns the container style and text colour of a message: red
// (attention) while firing critical or error, amber for warning, blue for
// info, green when resolved, neutral for a test.
func style(m alerting.Message) (string, string) {
	switch {
	case m.Kind == alerting.KindResolved:
		return "good", "Good"
	case m.Kind == alerting.KindTest:
		return "emphasis", "Default"
	case m.Severity == alerting.SeverityWarning:
		return "warning", "Warning"
	case m.Severity == alerting.SeverityInfo:
		return "accent", "Accent"
	}
	return "attention", "Attention"
}

// Build returns the webhook body of an envelope: one card per message (at
// most MaxCards).
func Build(e alerting.Envelope) Message {
	msg := Message{Type: "message"}
	for i, m := range e.Messages {
		if i == MaxCards {
			break
		}
		msg.Attachments = append(msg.Attachments, Attachment{ContentType: "application/vnd.microsoft.card.adaptive", Content: card(m)})
	}
	return msg
}

func card(m alerting.Message) Card {
	st, color := style(m)
	c := Card{Schema: SchemaURL, Type: "AdaptiveCard", Version: SchemaVersion, MSTeams: MSTeams{Width: "Full"}}
	c.Body = append(c.Body, Element{Type: "Container", Style: st, Bleed: true, Items: []Element{
		{Type: "TextBlock", Text: alerting.Ellipsis(notify.Render(texts, "title", m), 300), Weight: "Bolder", Size: "Medium", Color: color, Wrap: true},
	}})
	c.Body = append(c.Body, Element{Type: "TextBlock", Text: alerting.Ellipsis(notify.Render(texts, "body", m), 2000), Wrap: true})
	var facts []Fact
	if m.Kind != alerting.KindTest {
		sev := m.Severity
		if sev == "" {
			sev = alerting.SeverityError
		}
		state := "firing"
		if m.Kind == alerting.KindResolved {
			state = "resolved"
		}
		facts = append(facts, Fact{"State", state}, Fact{"Severity", sev})
		if m.Summary != "" {
			facts = append(facts, Fact{"Measured", alerting.Ellipsis(notify.Render(texts, "measured", m), 300)})
		}
		if m.RuleName != "" {
			facts = append(facts, Fact{"Rule", alerting.Ellipsis(notify.Render(texts, "rule", m), 300)})
		}
		if m.MCPName != "" {
			facts = append(facts, Fact{"MCP", alerting.Ellipsis(notify.Render(texts, "mcp", m), 300)})
		}
	}
	if !m.At.IsZero() {
		facts = append(facts, Fact{"At", m.At.UTC().Format(time.RFC1123)})
	}
	c.Body = append(c.Body, Element{Type: "FactSet", Facts: facts})
	if m.RuleURL != "" {
		c.Actions = append(c.Actions, Action{Type: "Action.OpenUrl", Title: "View the rule", URL: m.RuleURL})
	}
	if m.SettingsURL != "" {
		c.Actions = append(c.Actions, Action{Type: "Action.OpenUrl", Title: "Channel settings", URL: m.SettingsURL})
	}
	return c
}

// Notifier posts to Workflows webhooks.
type Notifier struct {
	Client *http.Client
}

var _ alerting.Notifier = (*Notifier)(nil)

// Notify implements alerting.Notifier. The stored URL is checked again
// before every post. 404 (the workflow was deleted) and 401/403 (its
// signature no longer valid) mean the webhook is gone: revoked.
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	if _, err := checkURL(e.To); err != nil {
		return false, &alerting.SendError{Code: "webhook_host_not_allowed"}
	}
	body, err := jsonBody(Build(e))
	if err != nil {
		return false, err
	}
	status, h, _, err := notify.PostJSON(ctx, n.Client, e.To, body)
	if err != nil {
		return notify.Retryable(err), err
	}
	retry, rerr := notify.Retrier(status, h, "")
	if rerr == nil {
		return false, nil
	}
	if status == http.StatusNotFound || status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusGone {
		rerr.(*alerting.SendError).Revoked = true
		return false, rerr
	}
	return retry, rerr
}
