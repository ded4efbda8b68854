package notify

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"text/template"

	"github.com/mcpscope/telemetry/alerting"
)

// FixedHostURL is the connection of a destination connected with one URL
// on the provider's own hosts, checked by alerting.ValidateWebhookURL
// (Slack, Discord): the URL is the secret, the hint masks its last
// segment.
func FixedHostURL(channel, doc string) *alerting.ConnectionSpec {
	return &alerting.ConnectionSpec{
		URLKind: true,
		Fields:  []alerting.ConnectionField{{Name: "url", Doc: doc}},
		Open: func(_ context.Context, body map[string]string, _ alerting.ConnectEnv) (alerting.Sealed, error) {
			u, err := alerting.ValidateWebhookURL(channel, body["url"])
			if err != nil {
				return alerting.Sealed{}, err
			}
			return alerting.Sealed{Secret: u.String(), Hint: alerting.WebhookHint(u)}, nil
		},
	}
}

// HostUnder reports whether host is one label or more under one of the
// suffixes (each given with its leading dot, e.g. ".logic.azure.com"):
// a.logic.azure.com is, logic.azure.com and a.logic.azure.com.evil are
// not.
func HostUnder(host string, suffixes ...string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(host, s) {
			label := strings.TrimSuffix(host, s)
			if label != "" && !strings.HasPrefix(label, ".") && !strings.HasSuffix(label, ".") && !strings.Contains(label, "..") {
				return true
			}
		}
	}
	return false
}

// CheckPublicHost refuses, at connect time, a host that is or resolves to
// an internal address (Internal): loopback, private, link-local (the
// cloud metadata address 169.254.169.254 among them), CGNAT and the
// like. Without env.LookupHost (an outbound proxy is configured, which
// decides what is reachable) only IP literals are checked. The dialer
// checks again at every send (HTTPClient), so a name that later resolves
// inside is refused then too. Errors are EWEBHOOKHOST on body.url.
func CheckPublicHost(ctx context.Context, env alerting.ConnectEnv, host string) error {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if Internal(a) {
			return alerting.WebhookError("The URL names an internal address (%s); the service posts only to public addresses.", a)
		}
		return nil
	}
	if env.LookupHost == nil {
		return nil
	}
	addrs, err := env.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return alerting.WebhookError("The host %s does not resolve.", host)
	}
	for _, a := range addrs {
		if Internal(a) {
			return alerting.WebhookError("The host %s resolves to an internal address; the service posts only to public addresses.", host)
		}
	}
	return nil
}

// Render executes a text template of a sender into a string. The
// templates are the senders' own constants, parsed at start-up, so an
// error is a bug: it yields "" rather than a half message.
func Render(t *template.Template, name string, data any) string {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return ""
	}
	return b.String()
}

// ConnectEnv is what the connection checks get from the outbound
// configuration: a resolver for the check of internal addresses, none
// when a proxy is configured (the proxy decides what is reachable, and
// this host may not even resolve outside names).
func (o Outbound) ConnectEnv() alerting.ConnectEnv {
	if o.ProxyURL != "" {
		return alerting.ConnectEnv{}
	}
	return alerting.ConnectEnv{LookupHost: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}}
}
