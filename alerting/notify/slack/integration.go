package slack

import (
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"net/http"
)

// Integration describes Slack to the registry (alerting/notify/registry).
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: alerting.ChannelSlack, Label: "Slack", Scope: alerting.ScopeTeam,
		Description:        "Alerts are recorded for one Slack channel, connected by an admin with an incoming webhook; sending is not switched on yet.",
		SendingDescription: "Alerts are posted to one Slack channel, connected by an admin with an incoming webhook."},
	Gate:       alerting.GateChat,
	Connection: notify.FixedHostURL(alerting.ChannelSlack, "The incoming webhook URL Slack gave you: https://hooks.slack.com/services/T…/B…/{secret}."),
	New:        notify.WithClient(func(c *http.Client) alerting.Notifier { return &Notifier{Client: c} }),
}
