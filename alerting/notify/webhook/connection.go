package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

// internalNames are host names that name this network, whatever they
// resolve to.
var internalSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa", ".lan"}

// checkURL checks a webhook URL: https, the shared character and form
// rules (alerting.CheckHTTPSURL), a port that is a number, and no name of
// the local network or IP literal of an internal address.
func checkURL(raw string) (*url.URL, error) {
	u, err := alerting.CheckHTTPSURL(raw, func(host string) bool {
		if host == "localhost" || strings.HasSuffix(host, ".") {
			return false
		}
		for _, s := range internalSuffixes {
			if strings.HasSuffix(host, s) {
				return false
			}
		}
		return true
	}, func(host string) string {
		return "The host " + host + " names the local network; the service posts only to public addresses."
	})
	if err != nil {
		return nil, err
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, alerting.WebhookError("The webhook URL's port must be a number from 1 to 65535.")
		}
	}
	if err := notify.CheckPublicHost(context.Background(), alerting.ConnectEnv{}, u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// hint is the host with the rest masked: a path often is the secret
// (n8n, Zapier).
func hint(u *url.URL) string { return u.Host + "/" + alerting.WebhookMask }

func seal(s stored, u *url.URL) (alerting.Sealed, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return alerting.Sealed{}, err
	}
	return alerting.Sealed{Secret: string(b), Hint: hint(u), Shown: map[string]string{"signing_secret": s.Secret}}, nil
}

// Integration describes signed webhooks to the registry.
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: ID, Label: "Webhook", Scope: alerting.ScopeTeam,
		Description:        "Alerts are recorded for signed JSON events to an HTTPS URL of your choice; sending is not switched on yet.",
		SendingDescription: "Alerts are posted as signed JSON events (Standard Webhooks) to an HTTPS URL of your choice."},
	Gate: alerting.GateChat,
	Connection: &alerting.ConnectionSpec{
		// Not URLKind: PUT …/webhook answers no signing secret.
		Fields: []alerting.ConnectionField{{Name: "url", Doc: "Any public HTTPS URL; it may not name or resolve to a loopback, private, link-local or metadata address. " +
			"The answer carries the signing secret once."}},
		Open: func(ctx context.Context, body map[string]string, env alerting.ConnectEnv) (alerting.Sealed, error) {
			u, err := checkURL(body["url"])
			if err != nil {
				return alerting.Sealed{}, err
			}
			if err := notify.CheckPublicHost(ctx, env, u.Hostname()); err != nil {
				return alerting.Sealed{}, err
			}
			return seal(stored{URL: u.String(), Secret: NewSecret()}, u)
		},
		Rotate: func(raw string) (alerting.Sealed, error) {
			var s stored
			if err := json.Unmarshal([]byte(raw), &s); err != nil {
				return alerting.Sealed{}, err
			}
			u, err := url.Parse(s.URL)
			if err != nil {
				return alerting.Sealed{}, err
			}
			s.Previous, s.PreviousUntil, s.Secret = s.Secret, time.Now().Add(RotationGrace).UTC(), NewSecret()
			return seal(s, u)
		},
	},
	New: notify.WithClient(func(c *http.Client) alerting.Notifier { return &Notifier{Client: c} }),
}
