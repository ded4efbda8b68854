// Package registry is the list of destinations alerts can be sent to:
// importing it registers each integration with alerting.Register, in
// display order. Adding a destination is its package under
// alerting/notify/<id> and one line here; the catalogue, the rule
// channels, /docs, the connect routes, the outbox's dispatch and the
// dashboard's channel list follow. See docs/delivery.md.
package registry

import (
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify/discord"
	"github.com/mcpscope/telemetry/alerting/notify/email"
	"github.com/mcpscope/telemetry/alerting/notify/googlechat"
	"github.com/mcpscope/telemetry/alerting/notify/pagerduty"
	"github.com/mcpscope/telemetry/alerting/notify/slack"
	"github.com/mcpscope/telemetry/alerting/notify/teams"
	"github.com/mcpscope/telemetry/alerting/notify/webhook"
)

// All are the integrations besides in_app (which alerting registers
// itself), in display order.
var All = []alerting.Integration{
	email.Integration,
	slack.Integration,
	discord.Integration,
	pagerduty.Integration,
	teams.Integration,
	googlechat.Integration,
	webhook.Integration,
}

func init() { alerting.Register(All...) }
