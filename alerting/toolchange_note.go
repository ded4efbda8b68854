package alerting

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// The message of a firing tool_changes rule names the changes of its
// window (docs/tool-changes.md): each change's tool, kind, severity and
// reasons, and the clients that called the tool in the 7 days before it.

// maxNotedChanges bounds the changes a message names, maxNotedClients
// the clients named per change.
const (
	maxNotedChanges = 3
	maxNotedClients = 5
)

// ToolChangeNote describes changes (the newest first, of total in the
// window) with their affected clients (impacts[i] for changes[i]).
func ToolChangeNote(changes []analytics.InventoryChange, impacts [][]analytics.AffectedClient, total int) string {
	var parts []string
	for i, c := range changes {
		s := c.Tool + " " + c.Kind
		if c.Severity != nil {
			s += ", " + *c.Severity
		}
		var reasons []string
		for _, r := range c.Reasons {
			reasons = append(reasons, strings.TrimSuffix(r.Message, "."))
		}
		if len(reasons) > 0 {
			s += ": " + strings.Join(reasons, "; ")
		}
		s += "."
		if i < len(impacts) {
			s += " " + clientsText(impacts[i])
		}
		parts = append(parts, s)
	}
	if more := total - len(changes); more > 0 {
		parts = append(parts, fmt.Sprintf("And %d more changes.", more))
	}
	return strings.Join(parts, " ")
}

func clientsText(clients []analytics.AffectedClient) string {
	if len(clients) == 0 {
		return "No client called it in the 7 days before."
	}
	var names []string
	for i, c := range clients {
		if i == maxNotedClients {
			names = append(names, fmt.Sprintf("%d more", len(clients)-i))
			break
		}
		name := c.ClientName
		if name == "" {
			name = "(unnamed client)"
		}
		names = append(names, fmt.Sprintf("%s (%d calls)", name, c.CallsBefore))
	}
	return "Clients that called it in the 7 days before: " + strings.Join(names, ", ") + "."
}

// noteToolChanges sets the change note of a firing tool_changes rule's
// reading (nil stores: none; a failed read leaves the message without it,
// the firing itself matters more).
func (e *RuleEvaluator) noteToolChanges(ctx context.Context, c *change, now time.Time) {
	r := c.rule
	if r.Metric != MetricToolChanges || (!c.fired && !c.notice) || e.ChangeList == nil {
		return
	}
	from, to := r.Window(now)
	minSev := ""
	if r.MinSeverity != nil {
		minSev = *r.MinSeverity
	}
	changes, total, err := e.ChangeList.RecentToolChanges(ctx, r.MCPID, from, to, r.Tool, minSev, maxNotedChanges)
	if err != nil || len(changes) == 0 {
		return
	}
	var impacts [][]analytics.AffectedClient
	if e.ChangeImpact != nil {
		for _, ch := range changes {
			imp, err := e.ChangeImpact.ToolChangeImpact(ctx, r.MCPID, ch.Tool, ch.At, ch.At)
			if err != nil {
				break
			}
			impacts = append(impacts, imp.AffectedClients)
		}
	}
	c.reading.ChangeNote = ToolChangeNote(changes, impacts, total)
}
