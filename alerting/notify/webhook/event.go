package webhook

import (
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// Version is the version of the event format; a change that removes or
// renames a field makes the next one. Receivers should ignore fields they
// do not know.
const Version = 1

// Event types.
const (
	TypeFired    = "rule.fired"
	TypeResolved = "rule.resolved"
	TypeTest     = "test"
)

// Event is the JSON body of every signed webhook request, in the shape
// Standard Webhooks recommends (type, timestamp, data). docs/delivery.md
// documents it.
type Event struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
	// ID is the delivery's id, the same as the webhook-id header: the same
	// on every retry of the delivery, so receivers can drop duplicates.
	ID        string    `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what the event says.
type Data struct {
	Rule     *Rule    `json:"rule"`
	MCP      *MCP     `json:"mcp"`
	Severity string   `json:"severity"`
	State    string   `json:"state"`
	Title    string   `json:"title"`
	Body     string   `json:"body"`
	Summary  string   `json:"summary"`
	Metric   string   `json:"metric,omitempty"`
	Value    *float64 `json:"value"`
	// Threshold and Comparator: nil for a test.
	Threshold  *float64 `json:"threshold"`
	Comparator string   `json:"comparator,omitempty"`
	Links      Links    `json:"links"`
}

// Rule identifies the rule.
type Rule struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// MCP identifies the MCP server the rule measures.
type MCP struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Links are the dashboard's pages ("" when no public base URL is set).
type Links struct {
	Rule     string `json:"rule,omitempty"`
	Settings string `json:"settings,omitempty"`
}

// Build returns the event of one message. Text fields are the user's
// (rule and MCP names) as they are: JSON escapes them, and the receiver
// decides how to show them.
func Build(m alerting.Message) Event {
	ev := Event{Type: TypeFired, Version: Version, ID: m.DeliveryID, Timestamp: m.At.UTC(),
		Data: Data{Severity: m.Severity, State: alerting.StateFiring, Title: m.Title, Body: m.Body, Summary: m.Summary,
			Links: Links{Rule: m.RuleURL, Settings: m.SettingsURL}}}
	switch m.Kind {
	case alerting.KindResolved:
		ev.Type, ev.Data.State = TypeResolved, alerting.StateOK
	case alerting.KindTest:
		ev.Type, ev.Data.State = TypeTest, ""
		return ev
	}
	if ev.Data.Severity == "" {
		ev.Data.Severity = alerting.SeverityError
	}
	ev.Data.Rule = &Rule{ID: m.RuleID, Name: m.RuleName}
	ev.Data.MCP = &MCP{ID: m.MCPID, Name: m.MCPName}
	d := m.Details
	ev.Data.Metric, ev.Data.Value, ev.Data.Comparator = d.Metric, d.Value, d.Comparator
	th := d.Threshold
	ev.Data.Threshold = &th
	return ev
}
