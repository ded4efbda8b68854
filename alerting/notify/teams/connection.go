package teams

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// Hosts of the Workflows webhooks (each one label or more under these).
var hostSuffixes = []string{".logic.azure.com", ".environment.api.powerplatform.com"}

var queryKeys = map[string]bool{"api-version": true, "sp": true, "sv": true, "sig": true}

func hostMessage(host string) string {
	if host == "webhook.office.com" || strings.HasSuffix(host, ".webhook.office.com") || host == "outlook.office.com" {
		return "This is an Office 365 connector URL (webhook.office.com); Microsoft retired those connectors in 2026. " +
			"In Teams, add the Workflows template \"Post to a channel when a webhook request is received\" and paste the URL it gives (on *.logic.azure.com or *.environment.api.powerplatform.com)."
	}
	return "A Teams Workflows webhook is on *.logic.azure.com or *.environment.api.powerplatform.com; this URL is on " + host + "."
}

// checkURL accepts a Workflows trigger URL: https on a Workflows host,
// a path ending in /triggers/manual/paths/invoke, and only the query
// parameters the trigger URL carries (api-version, sp, sv, and sig, the
// secret signature).
func checkURL(raw string) (*url.URL, error) {
	u, err := notify.QueryURL(raw, func(h string) bool { return notify.HostUnder(h, hostSuffixes...) }, hostMessage, queryKeys, "sig")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(u.Path, "/workflows/") || !strings.HasSuffix(u.Path, "/triggers/manual/paths/invoke") {
		return nil, alerting.WebhookError("A Workflows webhook URL has a path like /workflows/{id}/triggers/manual/paths/invoke; paste the whole URL the Workflows step shows.")
	}
	return u, nil
}

func jsonBody(m Message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, &alerting.SendError{Code: "payload_error"}
	}
	return b, nil
}

// Integration describes Microsoft Teams to the registry.
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: ID, Label: "Microsoft Teams", Scope: alerting.ScopeTeam,
		Description:        "Alerts are recorded for one Teams channel, connected by an admin with a Workflows webhook; sending is not switched on yet.",
		SendingDescription: "Alerts are posted as Adaptive Cards to one Teams channel, connected by an admin with a Workflows webhook."},
	Gate: alerting.GateChat,
	Connection: &alerting.ConnectionSpec{
		URLKind: true,
		Fields: []alerting.ConnectionField{{Name: "url", Doc: "The URL of a Teams Workflows webhook (\"Post to a channel when a webhook request is received\"), " +
			"on *.logic.azure.com or *.environment.api.powerplatform.com. Office 365 connector URLs (webhook.office.com) were retired and are refused."}},
		Open: func(_ context.Context, body map[string]string, _ alerting.ConnectEnv) (alerting.Sealed, error) {
			u, err := checkURL(body["url"])
			if err != nil {
				return alerting.Sealed{}, err
			}
			return alerting.Sealed{Secret: u.String(), Hint: u.Host + u.Path + "?sig=" + alerting.WebhookMask}, nil
		},
	},
	New: notify.WithClient(func(c *http.Client) alerting.Notifier { return &Notifier{Client: c} }),
}
