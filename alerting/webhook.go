package alerting

import (
	"net/url"
	"strings"

	"github.com/mcpscope/telemetry"
)

// MaxWebhookURLLen caps the webhook URL in bytes. Real Slack and Discord
// webhooks are under 200 bytes; the cap bounds what we parse and store.
const MaxWebhookURLLen = 2048

// WebhookMask replaces the secret segment of a webhook in its hint.
const WebhookMask = "••••••••"

// Lengths of the secret segment (the Slack secret, the Discord token). Real
// ones are 24 and about 68 characters; the lower bound catches a truncated
// paste and keeps the mask from hiding a one-letter "secret".
const (
	minWebhookSecretLen = 8
	maxWebhookSecretLen = 128
)

// webhookHosts are the only hosts each team channel may post to. The check is
// exact string equality on the lower-cased host name, which by itself refuses
// look-alike and suffix hosts (hooks.slack.com.evil.com, evilhooks.slack.com),
// punycode, IP literals in every encoding and internal names.
var webhookHosts = map[string][]string{
	ChannelSlack:   {"hooks.slack.com"},
	ChannelDiscord: {"discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"},
}

// ValidateWebhookURL checks a webhook URL for a team channel and returns it in
// canonical form (lower-case host, no :443, query keys sorted), which is the
// form to store. The URL is fetched by the service later, so the check is
// what stops server-side requests to internal or metadata addresses; it also
// catches the common mistake of pasting the provider's app or channel page.
//
// The check accepts only, byte for byte:
//
//	https://hooks.slack.com/services/{T…}/{B…}/{secret}
//	https://{discord host}/api/webhooks/{id}/{token}
//	https://{discord host}/api/v{N}/webhooks/{id}/{token}[?thread_id={id}][&wait=true|false]
//
// and refuses everything else, in particular: any scheme but https, user
// info, a port other than 443, any character outside printable ASCII
// (whitespace, control characters, raw Unicode), backslashes, any percent
// escape (no real webhook needs one, and escapes are how host and dot-segment
// tricks hide), fragments, empty or dot path segments, a trailing slash, and a
// host with a trailing dot (hooks.slack.com. names the same host, but one
// canonical form keeps the stored URL and the hint unambiguous). Host case is
// ignored. Slack URLs take no query; Discord URLs may carry thread_id (post
// into a thread) and wait, which are destination choices, not tricks.
//
// A channel that is not a team channel gets ENOTFOUND (unknown) or EINVALID
// (personal) on path.channel; a URL that fails the check gets EWEBHOOKHOST
// on body.url with a message saying what is wrong.
func ValidateWebhookURL(channel, raw string) (*url.URL, error) {
	if err := CheckTeamChannel(channel); err != nil {
		return nil, err
	}
	hosts, ok := webhookHosts[channel]
	if !ok {
		return nil, telemetry.FieldError(telemetry.EINVALID, "path.channel", "%s is not connected with a Slack or Discord webhook URL.", channel)
	}
	u, err := CheckHTTPSURL(raw, func(host string) bool { return contains(hosts, host) },
		func(host string) string { return hostMessage(channel, host, hosts) })
	if err != nil {
		return nil, err
	}
	host := u.Hostname()
	if u.Host != host && u.Host != host+":443" {
		return nil, webhookErr("The webhook URL must not name a port other than 443.")
	}
	canon := &url.URL{Scheme: "https", Host: host, Path: u.Path}
	switch channel {
	case ChannelSlack:
		if err := checkSlackPath(u); err != nil {
			return nil, err
		}
	case ChannelDiscord:
		if err := checkDiscordPath(u); err != nil {
			return nil, err
		}
		q, err := discordQuery(u)
		if err != nil {
			return nil, err
		}
		canon.RawQuery = q
	}
	return canon, nil
}

// CheckHTTPSURL is the part of the webhook URL check every URL
// destination shares (ValidateWebhookURL's list, except the port and the
// path): checkWebhookChars, https, no opaque form, no user info, no
// fragment, and a lower-cased host that allowHost accepts (hostMsg says
// why not). The host of the returned URL is lower case; the port is left
// as given. Errors are EWEBHOOKHOST on body.url.
func CheckHTTPSURL(raw string, allowHost func(host string) bool, hostMsg func(host string) string) (*url.URL, error) {
	if err := checkWebhookChars(raw); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, webhookErr("The webhook URL is not a valid URL.")
	}
	if u.Scheme != "https" {
		return nil, webhookErr("The webhook URL must start with https://.")
	}
	if u.Opaque != "" || !strings.HasPrefix(raw[len("https:"):], "//") {
		return nil, webhookErr("The webhook URL must start with https:// followed by the host.")
	}
	if u.User != nil {
		return nil, webhookErr("The webhook URL must not contain user info (an @ before the host).")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, webhookErr("The webhook URL must not contain a fragment (#…).")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return nil, webhookErr("The webhook URL has no host.")
	}
	if !allowHost(host) {
		return nil, webhookErr("%s", hostMsg(host))
	}
	u.Host = strings.ToLower(u.Host)
	return u, nil
}

// WebhookError is EWEBHOOKHOST on body.url: a URL a destination refuses.
func WebhookError(format string, args ...any) error { return webhookErr(format, args...) }

// CheckTeamChannel checks the channel of a webhook route: ENOTFOUND on
// path.channel for a name that is no channel, EINVALID for a personal
// channel, which takes no webhook.
func CheckTeamChannel(channel string) error {
	if IsTeamChannel(channel) {
		return nil
	}
	teams := strings.Join(ChannelIDsOf(ScopeTeam), ", ")
	if IsPersonalChannel(channel) {
		return telemetry.FieldError(telemetry.EINVALID, "path.channel", "%s is a personal channel; only the team channels (%s) are connected.", channel, teams)
	}
	return telemetry.FieldError(telemetry.ENOTFOUND, "path.channel", "There is no team channel named %q; the team channels are %s.", channel, teams)
}

// WebhookHint returns the host and path of a webhook with the trailing secret
// segment masked, e.g. hooks.slack.com/services/T0001/B0001/••••••••. The
// query, if any, is left out: the hint identifies the destination, it does
// not reproduce the URL.
func WebhookHint(u *url.URL) string {
	if u == nil {
		return ""
	}
	dir := u.Path
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		dir = dir[:i+1]
	} else {
		dir = "/"
	}
	return strings.ToLower(u.Hostname()) + dir + WebhookMask
}

func webhookErr(format string, args ...any) error {
	return telemetry.FieldError(telemetry.EWEBHOOKHOST, "body.url", format, args...)
}

// checkWebhookChars refuses the raw text before the parser sees it, so that
// nothing the parser would decode, normalise or tolerate can reach the host
// or path checks.
func checkWebhookChars(raw string) error {
	if raw == "" {
		return webhookErr("The webhook URL is empty.")
	}
	if len(raw) > MaxWebhookURLLen {
		return webhookErr("The webhook URL is longer than %d bytes.", MaxWebhookURLLen)
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c <= ' ' || c == 0x7f:
			return webhookErr("The webhook URL contains whitespace or a control character; paste it without spaces or line breaks.")
		case c >= 0x80:
			return webhookErr("The webhook URL contains characters outside ASCII.")
		case c == '\\':
			return webhookErr("The webhook URL contains a backslash.")
		case c == '%':
			return webhookErr("The webhook URL contains a percent escape; webhook URLs from Slack and Discord have none.")
		case strings.IndexByte(`"<>^`+"`"+`{|}`, c) >= 0:
			return webhookErr("The webhook URL contains the character %q, which a URL may not contain.", string(c))
		}
	}
	return nil
}

func hostMessage(channel, host string, hosts []string) string {
	switch {
	case host == "":
		return "The webhook URL has no host."
	case contains(hosts, strings.TrimSuffix(host, ".")):
		return "The webhook URL's host ends with a dot; remove it."
	case channel == ChannelSlack && (host == "slack.com" || strings.HasSuffix(host, ".slack.com")):
		return "This is a Slack page, not an incoming webhook. Create an Incoming Webhook in your Slack app and paste its URL, which starts with https://hooks.slack.com/services/."
	case channel == ChannelSlack:
		return "A Slack webhook must be on hooks.slack.com; this URL is on " + host + "."
	default:
		return "A Discord webhook must be on discord.com, discordapp.com, ptb.discord.com or canary.discord.com; this URL is on " + host + "."
	}
}

// checkSlackPath accepts /services/{team}/{bot}/{secret}: the team id starts
// with T (E for Enterprise Grid), the bot id with B, both upper-case
// alphanumerics, and the secret is alphanumeric.
func checkSlackPath(u *url.URL) error {
	const want = "A Slack webhook URL has the path /services/T…/B…/{secret}."
	if u.RawQuery != "" || u.ForceQuery {
		return webhookErr("A Slack webhook URL takes no query string.")
	}
	seg := strings.Split(u.Path, "/")
	if len(seg) != 5 || seg[0] != "" || seg[1] != "services" {
		return webhookErr(want)
	}
	if !slackID(seg[2], "TE") || !slackID(seg[3], "B") || !secretSegment(seg[4], false) {
		return webhookErr(want)
	}
	return nil
}

// checkDiscordPath accepts /api/webhooks/{id}/{token} and
// /api/v{N}/webhooks/{id}/{token}: the id is a snowflake (decimal, no leading
// zero), the token is letters, digits, - and _.
func checkDiscordPath(u *url.URL) error {
	const want = "A Discord webhook URL has the path /api/webhooks/{id}/{token}."
	seg := strings.Split(u.Path, "/")
	if len(seg) == 6 && seg[2] != "webhooks" {
		if !apiVersion(seg[2]) {
			return webhookErr(want)
		}
		seg = append(seg[:2], seg[3:]...)
	}
	if len(seg) != 5 || seg[0] != "" || seg[1] != "api" || seg[2] != "webhooks" {
		return webhookErr(want)
	}
	if !snowflake(seg[3]) || !secretSegment(seg[4], true) {
		return webhookErr(want)
	}
	return nil
}

// discordQuery returns the canonical query of a Discord webhook: only
// thread_id (a snowflake) and wait (true or false), each at most once.
func discordQuery(u *url.URL) (string, error) {
	if u.RawQuery == "" {
		if u.ForceQuery {
			return "", webhookErr("The webhook URL ends with an empty query (?).")
		}
		return "", nil
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || strings.Contains(u.RawQuery, ";") {
		return "", webhookErr("The webhook URL has a malformed query string.")
	}
	for key, vals := range q {
		if len(vals) != 1 {
			return "", webhookErr("The query parameter %s may appear once.", key)
		}
		v := vals[0]
		switch {
		case key == "thread_id" && snowflake(v):
		case key == "wait" && (v == "true" || v == "false"):
		default:
			return "", webhookErr("A Discord webhook URL may only carry the query parameters thread_id (a numeric id) and wait (true or false).")
		}
	}
	return q.Encode(), nil
}

func slackID(s, firsts string) bool {
	if len(s) < 2 || len(s) > 32 || strings.IndexByte(firsts, s[0]) < 0 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) && !(s[i] >= 'A' && s[i] <= 'Z') {
			return false
		}
	}
	return true
}

func secretSegment(s string, dashUnderscore bool) bool {
	if len(s) < minWebhookSecretLen || len(s) > maxWebhookSecretLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (dashUnderscore && (c == '-' || c == '_')) {
			continue
		}
		return false
	}
	return true
}

// snowflake accepts a Discord id: 1 to 20 decimal digits, no leading zero.
func snowflake(s string) bool {
	if len(s) == 0 || len(s) > 20 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// apiVersion accepts v1 to v99, no leading zero.
func apiVersion(s string) bool {
	return len(s) >= 2 && len(s) <= 3 && s[0] == 'v' && snowflake(s[1:])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
