package googlechat

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

const host = "chat.googleapis.com"

var queryKeys = map[string]bool{"key": true, "token": true, "threadKey": true, "messageReplyOption": true}

// checkURL accepts https://chat.googleapis.com/v1/spaces/{space}/messages
// with key and token (and optionally threadKey and messageReplyOption).
func checkURL(raw string) (*url.URL, error) {
	u, err := notify.QueryURL(raw, func(h string) bool { return h == host }, func(h string) string {
		if h == "chat.google.com" || h == "mail.google.com" {
			return "This is a Google Chat page, not a webhook. In the space, open Apps & integrations → Webhooks and paste the webhook URL (https://chat.googleapis.com/v1/spaces/…)."
		}
		return "A Google Chat webhook is on chat.googleapis.com; this URL is on " + h + "."
	}, queryKeys, "key", "token")
	if err != nil {
		return nil, err
	}
	seg := strings.Split(u.Path, "/")
	if len(seg) != 5 || seg[0] != "" || seg[1] != "v1" || seg[2] != "spaces" || seg[3] == "" || seg[4] != "messages" {
		return nil, alerting.WebhookError("A Google Chat webhook URL has the path /v1/spaces/{space}/messages.")
	}
	if rmo := u.Query().Get("messageReplyOption"); rmo != "" && rmo != "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD" && rmo != "REPLY_MESSAGE_OR_FAIL" {
		return nil, alerting.WebhookError("messageReplyOption must be REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD or REPLY_MESSAGE_OR_FAIL.")
	}
	return u, nil
}

// Integration describes Google Chat to the registry.
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: ID, Label: "Google Chat", Scope: alerting.ScopeTeam,
		Description:        "Alerts are recorded for one Google Chat space, connected by an admin with a space webhook; sending is not switched on yet.",
		SendingDescription: "Alerts are posted as cards to one Google Chat space, connected by an admin with a space webhook."},
	Gate: alerting.GateChat,
	Connection: &alerting.ConnectionSpec{
		URLKind: true,
		Fields: []alerting.ConnectionField{{Name: "url", Doc: "The space webhook URL Google Chat gave you: " +
			"https://chat.googleapis.com/v1/spaces/{space}/messages?key=…&token=…"}},
		Open: func(_ context.Context, body map[string]string, _ alerting.ConnectEnv) (alerting.Sealed, error) {
			u, err := checkURL(body["url"])
			if err != nil {
				return alerting.Sealed{}, err
			}
			return alerting.Sealed{Secret: u.String(), Hint: u.Host + u.Path + "?key=" + alerting.WebhookMask + "&token=" + alerting.WebhookMask}, nil
		},
	},
	New: notify.WithClient(func(c *http.Client) alerting.Notifier { return &Notifier{Client: c} }),
}
