package alerting

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpscope/telemetry"
)

const (
	slackOK   = "https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx"
	discordOK = "https://discord.com/api/webhooks/123456789012345678/Tok-en_abcdefghijklmnopqrstuvwxyz"
)

func TestValidateWebhookURL(t *testing.T) {
	const (
		slackHint   = "hooks.slack.com/services/T0001/B0001/" + WebhookMask
		discordHint = "discord.com/api/webhooks/123456789012345678/" + WebhookMask
	)
	tests := []struct {
		name    string
		channel string
		raw     string
		code    string // "" = accepted
		canon   string // accepted: the canonical URL
		hint    string // accepted: the hint
	}{
		// Accepted.
		{name: "slack", channel: ChannelSlack, raw: slackOK, canon: slackOK, hint: slackHint},
		{name: "slack upper-case host and scheme are canonicalised", channel: ChannelSlack,
			raw: "HTTPS://HOOKS.Slack.COM/services/T0001/B0001/abcdefghijklmnopqrstuvwx", canon: slackOK, hint: slackHint},
		{name: "slack explicit port 443 is dropped", channel: ChannelSlack,
			raw: "https://hooks.slack.com:443/services/T0001/B0001/abcdefghijklmnopqrstuvwx", canon: slackOK, hint: slackHint},
		{name: "slack enterprise team id", channel: ChannelSlack,
			raw:   "https://hooks.slack.com/services/E0ABC/B0DEF/abcdefghijklmnopqrstuvwx",
			canon: "https://hooks.slack.com/services/E0ABC/B0DEF/abcdefghijklmnopqrstuvwx", hint: "hooks.slack.com/services/E0ABC/B0DEF/" + WebhookMask},
		{name: "discord.com", channel: ChannelDiscord, raw: discordOK, canon: discordOK, hint: discordHint},
		{name: "discordapp.com", channel: ChannelDiscord,
			raw:   "https://discordapp.com/api/webhooks/1/abcdefgh",
			canon: "https://discordapp.com/api/webhooks/1/abcdefgh", hint: "discordapp.com/api/webhooks/1/" + WebhookMask},
		{name: "ptb.discord.com", channel: ChannelDiscord,
			raw:   "https://ptb.discord.com/api/webhooks/42/abcdefgh",
			canon: "https://ptb.discord.com/api/webhooks/42/abcdefgh", hint: "ptb.discord.com/api/webhooks/42/" + WebhookMask},
		{name: "canary.discord.com", channel: ChannelDiscord,
			raw:   "https://canary.discord.com/api/webhooks/42/abcdefgh",
			canon: "https://canary.discord.com/api/webhooks/42/abcdefgh", hint: "canary.discord.com/api/webhooks/42/" + WebhookMask},
		{name: "discord versioned api", channel: ChannelDiscord,
			raw:   "https://discord.com/api/v10/webhooks/42/abcdefgh",
			canon: "https://discord.com/api/v10/webhooks/42/abcdefgh", hint: "discord.com/api/v10/webhooks/42/" + WebhookMask},
		{name: "discord thread_id query is kept", channel: ChannelDiscord,
			raw:   "https://discord.com/api/webhooks/42/abcdefgh?thread_id=99",
			canon: "https://discord.com/api/webhooks/42/abcdefgh?thread_id=99", hint: "discord.com/api/webhooks/42/" + WebhookMask},
		{name: "discord query is sorted", channel: ChannelDiscord,
			raw:   "https://discord.com/api/webhooks/42/abcdefgh?wait=true&thread_id=99",
			canon: "https://discord.com/api/webhooks/42/abcdefgh?thread_id=99&wait=true", hint: "discord.com/api/webhooks/42/" + WebhookMask},
		{name: "discord port 443", channel: ChannelDiscord,
			raw:   "https://discord.com:443/api/webhooks/42/abcdefgh",
			canon: "https://discord.com/api/webhooks/42/abcdefgh", hint: "discord.com/api/webhooks/42/" + WebhookMask},

		// Channel errors.
		{name: "personal channel takes no webhook", channel: ChannelEmail, raw: slackOK, code: telemetry.EINVALID},
		{name: "unknown channel", channel: "sms", raw: slackOK, code: telemetry.ENOTFOUND},

		// Hostile or wrong: scheme and shape.
		{name: "http", channel: ChannelSlack, raw: "http://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "ftp", channel: ChannelSlack, raw: "ftp://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "javascript scheme", channel: ChannelSlack, raw: "javascript:alert(1)//hooks.slack.com/services/T0001/B0001/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "file scheme", channel: ChannelSlack, raw: "file:///etc/passwd", code: telemetry.EWEBHOOKHOST},
		{name: "no scheme", channel: ChannelSlack, raw: "hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "scheme-relative", channel: ChannelSlack, raw: "//hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "opaque https", channel: ChannelSlack, raw: "https:hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "one slash after scheme", channel: ChannelSlack, raw: "https:/hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "empty", channel: ChannelSlack, raw: "", code: telemetry.EWEBHOOKHOST},
		{name: "overlong", channel: ChannelSlack, raw: slackOK[:len(slackOK)-24] + strings.Repeat("a", MaxWebhookURLLen), code: telemetry.EWEBHOOKHOST},

		// Hosts.
		{name: "suffix host", channel: ChannelSlack, raw: "https://hooks.slack.com.evil.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "prefix host", channel: ChannelSlack, raw: "https://evilhooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "sub-subdomain", channel: ChannelSlack, raw: "https://x.hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "trailing dot", channel: ChannelSlack, raw: "https://hooks.slack.com./services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "punycode look-alike", channel: ChannelSlack, raw: "https://xn--hooks-slck-9db.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "cyrillic a look-alike", channel: ChannelSlack, raw: "https://hooks.sl\u0430ck.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "discord look-alike", channel: ChannelDiscord, raw: "https://discord.gg/api/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "discord other subdomain", channel: ChannelDiscord, raw: "https://evil.discord.com/api/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "discord url for slack channel", channel: ChannelSlack, raw: discordOK, code: telemetry.EWEBHOOKHOST},
		{name: "slack url for discord channel", channel: ChannelDiscord, raw: slackOK, code: telemetry.EWEBHOOKHOST},
		{name: "no host", channel: ChannelSlack, raw: "https:///services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},

		// User info and ports.
		{name: "provider host as user info", channel: ChannelSlack, raw: "https://hooks.slack.com@evil.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "user info on the right host", channel: ChannelSlack, raw: "https://user:pass@hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "empty user info", channel: ChannelSlack, raw: "https://@hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "port 8443", channel: ChannelSlack, raw: "https://hooks.slack.com:8443/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "port 80", channel: ChannelDiscord, raw: "https://discord.com:80/api/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "empty port", channel: ChannelSlack, raw: "https://hooks.slack.com:/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "port 443 with leading zero", channel: ChannelSlack, raw: "https://hooks.slack.com:0443/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},

		// Addresses and internal names.
		{name: "ipv4 loopback", channel: ChannelSlack, raw: "https://127.0.0.1/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "ipv4 decimal", channel: ChannelSlack, raw: "https://2130706433/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "ipv4 octal", channel: ChannelSlack, raw: "https://0177.0.0.1/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "ipv4 hex", channel: ChannelSlack, raw: "https://0x7f000001/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "ipv6 loopback", channel: ChannelSlack, raw: "https://[::1]/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "ipv6 mapped metadata", channel: ChannelDiscord, raw: "https://[::ffff:169.254.169.254]:443/api/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "metadata address", channel: ChannelDiscord, raw: "https://169.254.169.254/api/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "metadata name", channel: ChannelSlack, raw: "https://metadata.google.internal/computeMetadata/v1/", code: telemetry.EWEBHOOKHOST},
		{name: "localhost", channel: ChannelDiscord, raw: "https://localhost/api/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},

		// Paths on the right host.
		{name: "slack app page", channel: ChannelSlack, raw: "https://api.slack.com/apps/A0001/incoming-webhooks", code: telemetry.EWEBHOOKHOST},
		{name: "slack client page", channel: ChannelSlack, raw: "https://app.slack.com/client/T0001/C0001", code: telemetry.EWEBHOOKHOST},
		{name: "discord channel page", channel: ChannelDiscord, raw: "https://discord.com/channels/123/456", code: telemetry.EWEBHOOKHOST},
		{name: "slack missing secret", channel: ChannelSlack, raw: "https://hooks.slack.com/services/T0001/B0001", code: telemetry.EWEBHOOKHOST},
		{name: "slack truncated secret", channel: ChannelSlack, raw: "https://hooks.slack.com/services/T0001/B0001/abc", code: telemetry.EWEBHOOKHOST},
		{name: "slack lower-case team id", channel: ChannelSlack, raw: "https://hooks.slack.com/services/t0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "slack workflow trigger", channel: ChannelSlack, raw: "https://hooks.slack.com/triggers/T0001/1234/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "slack trailing slash", channel: ChannelSlack, raw: slackOK + "/", code: telemetry.EWEBHOOKHOST},
		{name: "slack double slash", channel: ChannelSlack, raw: "https://hooks.slack.com//services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "dot-dot segment", channel: ChannelSlack, raw: "https://hooks.slack.com/services/../services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "dot segment", channel: ChannelSlack, raw: "https://hooks.slack.com/services/./T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "discord non-numeric id", channel: ChannelDiscord, raw: "https://discord.com/api/webhooks/abc/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "discord id with leading zero", channel: ChannelDiscord, raw: "https://discord.com/api/webhooks/042/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "discord slack-compatible suffix", channel: ChannelDiscord, raw: "https://discord.com/api/webhooks/42/abcdefgh/slack", code: telemetry.EWEBHOOKHOST},
		{name: "discord bad version", channel: ChannelDiscord, raw: "https://discord.com/api/vX/webhooks/42/abcdefgh", code: telemetry.EWEBHOOKHOST},
		{name: "discord other api path", channel: ChannelDiscord, raw: "https://discord.com/api/v10/users/42/abcdefgh", code: telemetry.EWEBHOOKHOST},

		// Characters, escapes, queries, fragments.
		{name: "backslash before at", channel: ChannelSlack, raw: `https://hooks.slack.com\@evil.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx`, code: telemetry.EWEBHOOKHOST},
		{name: "backslash in path", channel: ChannelSlack, raw: `https://hooks.slack.com/services\T0001/B0001/abcdefghijklmnopqrstuvwx`, code: telemetry.EWEBHOOKHOST},
		{name: "encoded dot in host", channel: ChannelSlack, raw: "https://hooks%2eslack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "encoded dot-dot in path", channel: ChannelSlack, raw: "https://hooks.slack.com/services/%2e%2e/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "encoded slash in path", channel: ChannelSlack, raw: "https://hooks.slack.com/services%2FT0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "fragment", channel: ChannelSlack, raw: slackOK + "#x", code: telemetry.EWEBHOOKHOST},
		{name: "empty fragment", channel: ChannelSlack, raw: slackOK + "#", code: telemetry.EWEBHOOKHOST},
		{name: "leading space", channel: ChannelSlack, raw: " " + slackOK, code: telemetry.EWEBHOOKHOST},
		{name: "trailing newline", channel: ChannelSlack, raw: slackOK + "\n", code: telemetry.EWEBHOOKHOST},
		{name: "tab in host", channel: ChannelSlack, raw: "https://hooks.slack.com\t.evil.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "NUL", channel: ChannelSlack, raw: "https://hooks.slack.com\x00.evil.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx", code: telemetry.EWEBHOOKHOST},
		{name: "slack query", channel: ChannelSlack, raw: slackOK + "?x=1", code: telemetry.EWEBHOOKHOST},
		{name: "slack empty query", channel: ChannelSlack, raw: slackOK + "?", code: telemetry.EWEBHOOKHOST},
		{name: "discord foreign query parameter", channel: ChannelDiscord, raw: discordOK + "?url=http://169.254.169.254/", code: telemetry.EWEBHOOKHOST},
		{name: "discord repeated thread_id", channel: ChannelDiscord, raw: discordOK + "?thread_id=1&thread_id=2", code: telemetry.EWEBHOOKHOST},
		{name: "discord non-numeric thread_id", channel: ChannelDiscord, raw: discordOK + "?thread_id=abc", code: telemetry.EWEBHOOKHOST},
		{name: "discord semicolon query", channel: ChannelDiscord, raw: discordOK + "?wait=true;thread_id=1", code: telemetry.EWEBHOOKHOST},
		{name: "discord empty query", channel: ChannelDiscord, raw: discordOK + "?", code: telemetry.EWEBHOOKHOST},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ValidateWebhookURL(tt.channel, tt.raw)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := u.String(); got != tt.canon {
					t.Errorf("canonical = %q, want %q", got, tt.canon)
				}
				if got := WebhookHint(u); got != tt.hint {
					t.Errorf("hint = %q, want %q", got, tt.hint)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %q, want %s", u, tt.code)
			}
			var e *telemetry.Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("error = %v, want code %s", err, tt.code)
			}
			if tt.code == telemetry.EWEBHOOKHOST && e.Field != "body.url" {
				t.Errorf("field = %q, want body.url", e.Field)
			}
			if e.Message == "" || !strings.HasSuffix(e.Message, ".") {
				t.Errorf("message %q is not a sentence", e.Message)
			}
			if strings.Contains(e.Message, "abcdefghijklmnopqrstuvwx") || strings.Contains(e.Message, "abcdefgh") {
				t.Errorf("message %q echoes the secret", e.Message)
			}
		})
	}
}

func TestValidateWebhookURLMessages(t *testing.T) {
	tests := []struct {
		name, channel, raw, want string
	}{
		{"app page names the right host", ChannelSlack, "https://api.slack.com/apps/A0001", "hooks.slack.com/services/"},
		{"foreign host is named", ChannelSlack, "https://evil.example/services/T0001/B0001/abcdefghijklmnopqrstuvwx", "evil.example"},
		{"user info", ChannelSlack, "https://hooks.slack.com@evil.com/", "user info"},
		{"port", ChannelSlack, "https://hooks.slack.com:8443/services/T0001/B0001/abcdefghijklmnopqrstuvwx", "port"},
		{"discord path", ChannelDiscord, "https://discord.com/channels/1/2", "/api/webhooks/{id}/{token}"},
		{"whitespace", ChannelDiscord, discordOK + " ", "whitespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateWebhookURL(tt.channel, tt.raw)
			if msg := telemetry.ErrorMessage(err); !strings.Contains(msg, tt.want) {
				t.Errorf("message %q does not mention %q", msg, tt.want)
			}
		})
	}
}

func TestWebhookHint(t *testing.T) {
	if got := WebhookHint(nil); got != "" {
		t.Errorf("nil hint = %q", got)
	}
	u, _ := url.Parse("https://HOOKS.slack.com:443/services/T1/B2/secretsecret")
	if got, want := WebhookHint(u), "hooks.slack.com/services/T1/B2/"+WebhookMask; got != want {
		t.Errorf("hint = %q, want %q", got, want)
	}
}

// FuzzValidateWebhookURL checks the properties that make the webhook safe to
// fetch and to show: whatever is accepted is https on exactly an allowed
// host, without user info or any port but 443, in a canonical form that
// passes again unchanged, and its hint masks the secret segment.
func FuzzValidateWebhookURL(f *testing.F) {
	for _, s := range []string{slackOK, discordOK, discordOK + "?thread_id=1&wait=false",
		"https://hooks.slack.com@evil.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx",
		"https://hooks.slack.com%2eevil.com/", "https://[::1]:443/api/webhooks/1/abcdefgh"} {
		f.Add(false, s)
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, discord bool, raw string) {
		channel := ChannelSlack
		if discord {
			channel = ChannelDiscord
		}
		u, err := ValidateWebhookURL(channel, raw)
		if err != nil {
			var e *telemetry.Error
			if !errors.As(err, &e) || e.Code != telemetry.EWEBHOOKHOST || e.Field != "body.url" {
				t.Fatalf("error %v is not %s on body.url", err, telemetry.EWEBHOOKHOST)
			}
			return
		}
		s := u.String()
		re, perr := url.Parse(s)
		if perr != nil {
			t.Fatalf("canonical %q does not parse: %v", s, perr)
		}
		for _, v := range []*url.URL{u, re} {
			if v.Scheme != "https" || v.User != nil || v.Fragment != "" || v.Opaque != "" {
				t.Fatalf("accepted %q as %q: scheme, user info, fragment or opaque", raw, s)
			}
			if p := v.Port(); p != "" && p != "443" {
				t.Fatalf("accepted %q with port %q", raw, p)
			}
			if !contains(webhookHosts[channel], v.Hostname()) || v.Host != v.Hostname() {
				t.Fatalf("accepted %q on host %q", raw, v.Host)
			}
		}
		if channel == ChannelSlack && (u.RawQuery != "" || u.ForceQuery) {
			t.Fatalf("accepted slack %q with a query", raw)
		}
		again, err := ValidateWebhookURL(channel, s)
		if err != nil || again.String() != s {
			t.Fatalf("canonical %q of %q does not pass unchanged: %v", s, raw, err)
		}
		hint := WebhookHint(u)
		i := strings.LastIndexByte(u.Path, '/')
		dir, secret := u.Path[:i+1], u.Path[i+1:]
		if want := u.Hostname() + dir + WebhookMask; hint != want {
			t.Fatalf("hint %q, want %q", hint, want)
		}
		if secret == "" || (!strings.Contains(u.Hostname()+dir, secret) && strings.Contains(hint, secret)) {
			t.Fatalf("hint %q reveals the secret %q", hint, secret)
		}
	})
}
