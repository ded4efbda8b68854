// Package pagerduty sends alerts to PagerDuty as Events API v2 events: a
// firing triggers an incident whose dedup_key is unique to the firing
// episode, a re-notification triggers the same key again (PagerDuty adds
// it to the open incident rather than opening a second), and the resolve
// resolves that key. It only builds and posts the events; the outbox
// decides on retries. See docs/delivery.md.
package pagerduty

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// ID is the channel id (pinned).
const ID = "pagerduty"

// Endpoint is the Events API v2 enqueue URL (the US service region, the
// default); EndpointEU is the EU service region's.
const (
	Endpoint   = "https://events.pagerduty.com/v2/enqueue"
	EndpointEU = "https://events.eu.pagerduty.com/v2/enqueue"
)

// Service regions of a PagerDuty account (the connect body's region).
const (
	RegionUS = "us"
	RegionEU = "eu"
)

// euPrefix marks the stored (sealed) connection of an EU account: the
// secret is "eu/" + the routing key; a bare key is a US one, so the
// connections stored before regions existed keep working.
const euPrefix = RegionEU + "/"

// splitConnection returns the endpoint and the routing key of a stored
// connection.
func splitConnection(stored string) (endpoint, key string) {
	if k, ok := strings.CutPrefix(stored, euPrefix); ok {
		return EndpointEU, k
	}
	return Endpoint, stored
}

// PagerDuty's limits: the summary is cut at 1024 characters; dedup_key
// may be 255.
const (
	MaxSummary  = 1024
	MaxDedupKey = 255
)

// Event actions.
const (
	ActionTrigger = "trigger"
	ActionResolve = "resolve"
)

// Event is an Events API v2 event.
type Event struct {
	RoutingKey  string   `json:"routing_key"`
	EventAction string   `json:"event_action"`
	DedupKey    string   `json:"dedup_key"`
	Payload     *Payload `json:"payload,omitempty"`
	Client      string   `json:"client,omitempty"`
	ClientURL   string   `json:"client_url,omitempty"`
	Links       []Link   `json:"links,omitempty"`
}

// Payload is a trigger's payload: summary, source and severity are
// required; severity is critical, error, warning or info.
type Payload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// Link is a link shown on the incident.
type Link struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// texts are the events' words. PagerDuty shows the summary as plain text,
// so nothing needs escaping; it is only cut.
var texts = template.Must(template.New("pagerduty").Parse(`
{{- define "summary"}}[{{.Severity}}] {{.Title}}{{if .MCPName}} on {{.MCPName}}{{end}}{{end}}
{{- define "source"}}{{if .MCPName}}{{.MCPName}}{{else}}telemetryd{{end}}{{end}}
`))

// DedupKey is the key of m's firing episode: the rule and when the
// episode began. The firing, its re-notifications and its resolve share
// it; the next firing of the rule begins a new episode and a new key.
func DedupKey(m alerting.Message) string {
	at := m.EpisodeAt
	if at.IsZero() {
		at = m.At
	}
	return alerting.Ellipsis("telemetryd/"+m.RuleID+"/"+strconv.FormatInt(at.UnixMilli(), 10), MaxDedupKey)
}

// Build returns the event of one message: a resolve for KindResolved, a
// trigger otherwise.
func Build(routingKey string, m alerting.Message) Event {
	ev := Event{RoutingKey: routingKey, DedupKey: DedupKey(m), EventAction: ActionTrigger}
	if m.Kind == alerting.KindResolved {
		ev.EventAction = ActionResolve
		return ev
	}
	sev := m.Severity
	if !alerting.ValidSeverity(sev) {
		sev = alerting.SeverityError
	}
	data := struct {
		alerting.Message
		Severity string
	}{m, sev}
	p := &Payload{
		Summary:   alerting.Ellipsis(notify.Render(texts, "summary", data), MaxSummary),
		Source:    alerting.Ellipsis(notify.Render(texts, "source", data), 255),
		Severity:  sev,
		Component: m.MCPName, Group: m.MCPID, Class: m.Details.Metric,
		CustomDetails: map[string]any{
			"rule": m.RuleName, "rule_id": m.RuleID, "mcp": m.MCPName, "mcp_id": m.MCPID,
			"state": "firing", "value": m.Details.Value, "threshold": m.Details.Threshold,
			"comparator": m.Details.Comparator, "metric": m.Details.Metric, "measured": m.Summary, "body": m.Body,
		},
	}
	if !m.At.IsZero() {
		p.Timestamp = m.At.UTC().Format(time.RFC3339)
	}
	if m.Kind == alerting.KindTest {
		p.CustomDetails = map[string]any{"test": true, "body": m.Body}
	}
	ev.Payload = p
	ev.Client = "telemetryd"
	if m.RuleURL != "" {
		ev.ClientURL = m.RuleURL
		ev.Links = append(ev.Links, Link{Href: m.RuleURL, Text: "View the rule"})
	}
	if m.SettingsURL != "" {
		ev.Links = append(ev.Links, Link{Href: m.SettingsURL, Text: "Channel settings"})
	}
	return ev
}

// Notifier posts events to PagerDuty.
type Notifier struct {
	Client *http.Client
	// URL replaces the region's endpoint (tests); "" is the endpoint of
	// the connection's region.
	URL string
}

var _ alerting.Notifier = (*Notifier)(nil)

// answer is PagerDuty's answer body.
type answer struct {
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Errors  []string `json:"errors"`
}

// Notify implements alerting.Notifier: one event per message, in order. A
// test message triggers an incident of severity info and resolves it at
// once. Events are idempotent by dedup_key, so a retry of a digest whose
// first events went through does not open anything twice.
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	endpoint, key := splitConnection(e.To)
	for _, m := range e.Messages {
		ev := Build(key, m)
		if m.Kind == alerting.KindTest {
			m.Severity = alerting.SeverityInfo
			ev = Build(key, m)
			ev.DedupKey = "telemetryd/test/" + e.MessageID
		}
		if retry, err := n.post(ctx, endpoint, ev); err != nil {
			return retry, err
		}
		if m.Kind == alerting.KindTest {
			if retry, err := n.post(ctx, endpoint, Event{RoutingKey: key, EventAction: ActionResolve, DedupKey: ev.DedupKey}); err != nil {
				return retry, err
			}
		}
	}
	return false, nil
}

func (n *Notifier) post(ctx context.Context, endpoint string, ev Event) (bool, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return false, &alerting.SendError{Code: "payload_error"}
	}
	url := n.URL
	if url == "" {
		url = endpoint
	}
	status, h, resp, err := notify.PostJSON(ctx, n.Client, url, body)
	if err != nil {
		return notify.Retryable(err), err
	}
	if status == http.StatusAccepted || (status >= 200 && status < 300) {
		return false, nil
	}
	var a answer
	_ = json.Unmarshal(resp, &a)
	token := a.Message
	if len(a.Errors) > 0 {
		token += ": " + strings.Join(a.Errors, "; ")
	}
	retry, rerr := notify.Retrier(status, h, token)
	se := rerr.(*alerting.SendError)
	// A key PagerDuty does not know (deleted service or integration) is
	// the destination gone: the channel is broken until reconnected.
	if status == http.StatusNotFound || status == http.StatusUnauthorized || status == http.StatusForbidden ||
		(status == http.StatusBadRequest && mentionsKey(token)) {
		se.Revoked = true
		return false, se
	}
	return retry, se
}

func mentionsKey(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "routing key") || strings.Contains(s, "routing_key") || strings.Contains(s, "integration key")
}

var routingKey = regexp.MustCompile(`^[A-Za-z0-9]{32}$`)

// Integration describes PagerDuty to the registry.
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: ID, Label: "PagerDuty", Scope: alerting.ScopeTeam,
		Description:        "Alerts are recorded for PagerDuty incidents, connected by an admin with an Events API v2 integration key; sending is not switched on yet.",
		SendingDescription: "A firing rule opens a PagerDuty incident (Events API v2) that resolves itself when the rule resolves."},
	Gate:           alerting.GateChat,
	ResolvesAlways: true,
	Connection: &alerting.ConnectionSpec{
		Fields: []alerting.ConnectionField{
			{Name: "routing_key", Doc: "The 32-character integration key of an Events API v2 integration on a PagerDuty service."},
			{Name: "region", Optional: true, Doc: "The PagerDuty account's service region: `us` (default, events.pagerduty.com) or `eu` (events.eu.pagerduty.com)."},
		},
		Open: open,
	},
	New: notify.WithClient(func(c *http.Client) alerting.Notifier { return &Notifier{Client: c} }),
}

// open checks a connect body: the key, and the region (us when absent).
// An EU connection is stored as "eu/" + key (splitConnection).
func open(_ context.Context, body map[string]string, _ alerting.ConnectEnv) (alerting.Sealed, error) {
	k := strings.TrimSpace(body["routing_key"])
	if !routingKey.MatchString(k) {
		return alerting.Sealed{}, alerting.FieldInvalid("body.routing_key",
			"A PagerDuty integration key is 32 letters and digits (Service → Integrations → Events API v2 → Integration Key).")
	}
	hint := "routing key " + alerting.WebhookMask + k[len(k)-4:]
	switch strings.ToLower(strings.TrimSpace(body["region"])) {
	case "", RegionUS:
		return alerting.Sealed{Secret: k, Hint: hint}, nil
	case RegionEU:
		return alerting.Sealed{Secret: euPrefix + k, Hint: hint + " (EU)"}, nil
	}
	return alerting.Sealed{}, alerting.FieldInvalid("body.region",
		"region is the PagerDuty account's service region: us (events.pagerduty.com, the default) or eu (events.eu.pagerduty.com).")
}
