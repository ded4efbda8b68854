package discord

import (
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"net/http"
)

// Integration describes Discord to the registry (alerting/notify/registry).
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: alerting.ChannelDiscord, Label: "Discord", Scope: alerting.ScopeTeam,
		Description:        "Alerts are recorded for one Discord channel, connected by an admin with a channel webhook; sending is not switched on yet.",
		SendingDescription: "Alerts are posted to one Discord channel, connected by an admin with a channel webhook."},
	Gate: alerting.GateChat,
	Connection: notify.FixedHostURL(alerting.ChannelDiscord, "The channel webhook URL Discord gave you: https://discord.com/api/webhooks/{id}/{token} "+
		"(also discordapp.com, ptb.discord.com, canary.discord.com, /api/v{N}/webhooks/…, with optional thread_id and wait)."),
	New: notify.WithClient(func(c *http.Client) alerting.Notifier { return &Notifier{Client: c} }),
}
