package notify

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
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

// QueryURL checks a URL whose query carries the secret and may hold
// percent escapes (Teams Workflows' sig, Google Chat's token), which
// alerting.CheckHTTPSURL refuses: the part before '?' gets the shared
// check with allowHost, no port but 443, and the query may only have the
// keys in allowed (each once, required ones present). It returns the
// canonical URL (query keys sorted and re-escaped).
func QueryURL(raw string, allowHost func(string) bool, hostMsg func(string) string, allowed map[string]bool, required ...string) (*url.URL, error) {
	base, query, _ := strings.Cut(raw, "?")
	u, err := alerting.CheckHTTPSURL(base, allowHost, hostMsg)
	if err != nil {
		return nil, err
	}
	if u.Host != u.Hostname() && u.Host != u.Hostname()+":443" {
		return nil, alerting.WebhookError("The webhook URL must not name a port other than 443.")
	}
	u.Host = u.Hostname()
	for i := 0; i < len(query); i++ {
		if c := query[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"<>\^`+"`"+`{|}#`, c) >= 0 {
			return nil, alerting.WebhookError("The webhook URL's query contains a character a URL may not contain.")
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil || strings.Contains(query, ";") {
		return nil, alerting.WebhookError("The webhook URL has a malformed query string.")
	}
	for k, v := range q {
		if !allowed[k] || len(v) != 1 || v[0] == "" {
			return nil, alerting.WebhookError("The webhook URL's query parameter %q is not one the provider's webhook URLs carry (or it is repeated or empty).", k)
		}
	}
	for _, k := range required {
		if q.Get(k) == "" {
			return nil, alerting.WebhookError("The webhook URL lacks its %s query parameter; paste the whole URL.", k)
		}
	}
	u.RawQuery = q.Encode()
	return u, nil
}

// WithClient makes an Integration.New from a constructor that needs only
// the shared outbound client.
func WithClient(f func(*http.Client) alerting.Notifier) func(alerting.NotifierDeps) (alerting.Notifier, error) {
	return func(d alerting.NotifierDeps) (alerting.Notifier, error) {
		c, err := d.HTTP()
		if err != nil {
			return nil, err
		}
		return f(c), nil
	}
}
