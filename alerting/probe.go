package alerting

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// Probes (docs/probes.md): the service checks an MCP server itself, over
// Streamable HTTP, every interval, so that "no calls" can be told apart
// from "down". A probe belongs to one MCP; its checks' results live in the
// metrics store, its current state beside its definition.

// Probe statuses.
const (
	ProbeUp      = "up"
	ProbeDown    = "down"
	ProbeUnknown = "unknown" // never checked yet, or disabled before a check
)

// Kinds of failed check (ProbeResult.ErrorKind).
const (
	ProbeErrDNS        = "dns"         // the host name does not resolve
	ProbeErrConnect    = "connect"     // no TCP connection (refused, unreachable, refused address)
	ProbeErrTLS        = "tls"         // handshake or certificate failure
	ProbeErrTimeout    = "timeout"     // the check did not finish within timeout_ms
	ProbeErrHTTPStatus = "http_status" // an HTTP answer other than 2xx (and not 401/403)
	ProbeErrProtocol   = "protocol"    // an answer that is not the MCP the probe spoke
	ProbeErrAuth       = "auth"        // 401 or 403: the probe's headers are missing or wrong
)

// Limits of a probe's fields.
const (
	MinProbeIntervalSeconds     = 30
	MaxProbeIntervalSeconds     = 3600
	DefaultProbeIntervalSeconds = 60
	MinProbeTimeoutMs           = 1000
	MaxProbeTimeoutMs           = 30000
	DefaultProbeTimeoutMs       = 10000
	MaxProbeURLLen              = 2048
	MaxProbeHeaders             = 10
	MaxProbeHeaderBytes         = 8192 // names and values together
	// MaxProbesPerAccount is the default of probes.max_per_account.
	MaxProbesPerAccount = 20
	// ProbeCertWarning: a certificate expiring within this is a warning.
	ProbeCertWarning = 14 * 24 * time.Hour
	// MaxProbeErrorLen bounds a stored error text.
	MaxProbeErrorLen = 512
)

// Probe is a probe as every probe route returns it.
type Probe struct {
	ID              string `json:"id"`
	MCPID           string `json:"mcp_id"`
	URL             string `json:"url"`
	IntervalSeconds int    `json:"interval_seconds"`
	TimeoutMs       int    `json:"timeout_ms"`
	// Headers are the names of the headers the probe sends, each with a
	// hint of its value (the value itself is sealed, never read back).
	Headers map[string]string `json:"headers"`
	Enabled bool              `json:"enabled"`
	// Status is ProbeUp, ProbeDown or ProbeUnknown: the last check's.
	Status        string     `json:"status"`
	LastCheckedAt *time.Time `json:"last_checked_at"`
	// LastError is the last failed check's "kind: detail" while the
	// probe is down, nil while it is up.
	LastError *string `json:"last_error"`
	// LatencyMs is the last check's duration, nil before the first.
	LatencyMs       *float64 `json:"latency_ms"`
	ProtocolVersion *string  `json:"protocol_version"`
	// TLSExpiresAt is the server certificate's expiry (https only).
	TLSExpiresAt *time.Time `json:"tls_expires_at"`
	// Warning is set when the certificate expires within 14 days.
	Warning *string `json:"warning"`
	// DownSince is the first failed check of the current failure run.
	DownSince *time.Time `json:"down_since"`
	// ConsecutiveFailures counts the failed checks since the last good
	// one (what rule metric probe_down measures).
	ConsecutiveFailures int         `json:"consecutive_failures"`
	Uptime              ProbeUptime `json:"uptime"`
	CreatedAt           time.Time   `json:"created_at"`
}

// ProbeUptime is the share of good checks over the last 24 hours, 7 and 30
// days, from 0 to 1; nil when the period holds no check.
type ProbeUptime struct {
	Day   *float64 `json:"24h"`
	Week  *float64 `json:"7d"`
	Month *float64 `json:"30d"`
}

// ProbeCreate is the body of POST /v1/mcps/{id}/probes.
type ProbeCreate struct {
	URL             string
	IntervalSeconds *int
	TimeoutMs       *int
	Headers         map[string]string
	Enabled         *bool
}

// ProbeUpdate changes a probe; nil fields stay. Headers replaces them
// whole.
type ProbeUpdate struct {
	URL             *string
	IntervalSeconds *int
	TimeoutMs       *int
	Headers         *map[string]string
	Enabled         *bool
}

// Validate fills the defaults and checks c. Returns EINVALID with the field.
func (c *ProbeCreate) Validate() error {
	if c.IntervalSeconds == nil {
		v := DefaultProbeIntervalSeconds
		c.IntervalSeconds = &v
	}
	if c.TimeoutMs == nil {
		v := DefaultProbeTimeoutMs
		c.TimeoutMs = &v
	}
	if c.Enabled == nil {
		v := true
		c.Enabled = &v
	}
	return ProbeUpdate{URL: &c.URL, IntervalSeconds: c.IntervalSeconds, TimeoutMs: c.TimeoutMs, Headers: &c.Headers}.Validate()
}

// Validate checks the fields u sets. Returns EINVALID with the field.
func (u ProbeUpdate) Validate() error {
	if u.URL != nil {
		if _, err := ParseProbeURL(*u.URL); err != nil {
			return err
		}
	}
	if v := u.IntervalSeconds; v != nil && (*v < MinProbeIntervalSeconds || *v > MaxProbeIntervalSeconds) {
		return telemetry.FieldError(telemetry.EINVALID, "body.interval_seconds", "must be %d to %d seconds", MinProbeIntervalSeconds, MaxProbeIntervalSeconds)
	}
	if v := u.TimeoutMs; v != nil && (*v < MinProbeTimeoutMs || *v > MaxProbeTimeoutMs) {
		return telemetry.FieldError(telemetry.EINVALID, "body.timeout_ms", "must be %d to %d milliseconds", MinProbeTimeoutMs, MaxProbeTimeoutMs)
	}
	if u.Headers != nil {
		return validateProbeHeaders(*u.Headers)
	}
	return nil
}

// ParseProbeURL checks a probe's URL: http or https, a host, no user
// info, no fragment, at most MaxProbeURLLen bytes. Whether its addresses
// may be reached is the prober's check (probe.Guard), at create and at
// every run.
func ParseProbeURL(raw string) (*url.URL, error) {
	bad := func(msg string) error { return telemetry.FieldError(telemetry.EINVALID, "body.url", "%s", msg) }
	if len(raw) > MaxProbeURLLen {
		return nil, bad("must be at most 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return nil, bad("must be an absolute http:// or https:// URL of the MCP server's Streamable HTTP endpoint")
	}
	if u.User != nil || u.Fragment != "" {
		return nil, bad("must have no user info and no fragment; send credentials in headers")
	}
	return u, nil
}

// reservedProbeHeaders are set by the prober itself.
var reservedProbeHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Accept": true, "Connection": true,
	"Transfer-Encoding": true, "Te": true, "Upgrade": true, "Mcp-Session-Id": true, "Mcp-Protocol-Version": true,
	"Last-Event-Id": true, "Cookie": true, "Proxy-Authorization": true, "Keep-Alive": true, "Trailer": true,
}

func validateProbeHeaders(h map[string]string) error {
	if len(h) > MaxProbeHeaders {
		return telemetry.FieldError(telemetry.EINVALID, "body.headers", "at most %d headers", MaxProbeHeaders)
	}
	size := 0
	seen := map[string]bool{}
	for k, v := range h {
		size += len(k) + len(v)
		canon := http.CanonicalHeaderKey(k)
		field := "body.headers." + k
		switch {
		case !validHeaderName(k):
			return telemetry.FieldError(telemetry.EINVALID, field, "is not a valid header name")
		case reservedProbeHeaders[canon]:
			return telemetry.FieldError(telemetry.EINVALID, field, "is set by the prober and may not be given")
		case seen[canon]:
			return telemetry.FieldError(telemetry.EINVALID, field, "is given twice")
		case !utf8.ValidString(v) || strings.ContainsAny(v, "\r\n\x00"):
			return telemetry.FieldError(telemetry.EINVALID, field, "must be one line of valid UTF-8")
		}
		seen[canon] = true
	}
	if size > MaxProbeHeaderBytes {
		return telemetry.FieldError(telemetry.EINVALID, "body.headers", "names and values hold at most %d bytes together", MaxProbeHeaderBytes)
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// ProbeHeaderHints are the hints reads show for headers: each value
// masked but its last four characters when it is longer than 12 (so
// "Bearer sk-…" reads "••••••••a1b2"), all masked otherwise.
func ProbeHeaderHints(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		r := []rune(v)
		if len(r) > 12 {
			out[http.CanonicalHeaderKey(k)] = "••••••••" + string(r[len(r)-4:])
		} else {
			out[http.CanonicalHeaderKey(k)] = "••••••••"
		}
	}
	return out
}

// ProbeHeaderNames returns the names of h, sorted (for stable logs).
func ProbeHeaderNames(h map[string]string) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ProbeHeadersAssociatedData binds a probe's sealed headers to its
// account and probe, as WebhookAssociatedData does webhook URLs.
func ProbeHeadersAssociatedData(accountID, probeID string) []byte {
	return associatedData("alerting.probe.headers.v1", accountID, probeID)
}

// ProbeResult is one check, as GET /v1/probes/{probeId}/results lists it.
type ProbeResult struct {
	At     time.Time `json:"at"`
	Status string    `json:"status"`
	// LatencyMs is how long the check took, failed or not.
	LatencyMs float64 `json:"latency_ms"`
	// Error is "kind: detail" for a failed check, nil otherwise.
	Error           *string `json:"error"`
	ProtocolVersion *string `json:"protocol_version"`
	// SchemaHash is the SHA-256 of the tools/list answer (the sorted
	// names and canonical schema hashes of its tools), nil when the
	// check failed before it.
	SchemaHash *string `json:"schema_hash"`
}

// ProbeResultPage is a page of results, newest first.
type ProbeResultPage struct {
	Items      []ProbeResult `json:"items"`
	NextCursor *string       `json:"next_cursor"`
}

// ProbeCheck is what one check found: the prober's answer, before it is
// stored.
type ProbeCheck struct {
	At        time.Time
	OK        bool
	LatencyMs float64
	// ErrorKind is one of the ProbeErr* kinds; Error its detail.
	ErrorKind, Error string
	ProtocolVersion  string
	ServerVersion    string
	// Tools are the tools/list answer (names and canonical schema
	// hashes), nil when the check failed before it.
	Tools      []ProbeTool
	SchemaHash string
	// TLSExpiresAt is the leaf certificate's expiry (zero for http).
	TLSExpiresAt time.Time
}

// ProbeTool is one tool of a check's tools/list answer.
type ProbeTool struct {
	Name       string
	SchemaHash string
}

// ErrorText is the check's "kind: detail", cut to MaxProbeErrorLen, ""
// for a good check.
func (c ProbeCheck) ErrorText() string {
	if c.OK {
		return ""
	}
	s := c.ErrorKind
	if c.Error != "" {
		s += ": " + c.Error
	}
	if len(s) > MaxProbeErrorLen {
		s = strings.ToValidUTF8(s[:MaxProbeErrorLen], "")
	}
	return s
}

// CertWarning is the warning a probe shows for a certificate expiring
// within ProbeCertWarning of now, "" otherwise.
func CertWarning(expires, now time.Time) string {
	if expires.IsZero() || expires.Sub(now) > ProbeCertWarning {
		return ""
	}
	if !expires.After(now) {
		return "the TLS certificate expired on " + expires.UTC().Format(time.RFC3339)
	}
	days := int(expires.Sub(now).Hours() / 24)
	return "the TLS certificate expires in " + plural(days, "day") + " (" + expires.UTC().Format(time.RFC3339) + ")"
}

func plural(n int, unit string) string {
	s := strconv.Itoa(n) + " " + unit
	if n != 1 {
		s += "s"
	}
	return s
}

// ProbeService manages probes (the routes under /v1/mcps/{id}/probes and
// /v1/probes/{probeId}).
type ProbeService interface {
	// CreateProbe validates c, checks the URL may be reached and stores the
	// probe, its first check due within one interval (jittered). Returns
	// EINVALID, ENOTFOUND (no such MCP in the account), ELIMITREACHED.
	CreateProbe(ctx context.Context, accountID, mcpID string, c ProbeCreate) (Probe, error)
	// Probe returns one probe with its uptime. Returns ENOTFOUND.
	Probe(ctx context.Context, accountID, probeID string) (Probe, error)
	// Probes returns the MCP's probes, oldest first. Returns ENOTFOUND.
	Probes(ctx context.Context, accountID, mcpID string) ([]Probe, error)
	// UpdateProbe applies u. Returns ENOTFOUND, EINVALID.
	UpdateProbe(ctx context.Context, accountID, probeID string, u ProbeUpdate) (Probe, error)
	// DeleteProbe removes a probe (its results age out with the metrics
	// store's retention). Returns ENOTFOUND.
	DeleteProbe(ctx context.Context, accountID, probeID string) error
	// ProbeResults returns a page of the probe's checks in [from, to],
	// newest first. Returns ENOTFOUND, EBADREQUEST (cursor).
	ProbeResults(ctx context.Context, accountID, probeID string, f ProbeResultFilter) (ProbeResultPage, error)
	ProbeDowntimeService
}

// ProbeResultFilter selects a page of results.
type ProbeResultFilter struct {
	From, To time.Time
	Limit    int
	Cursor   string
}

// ProbeBadgeService manages the probes' public badges: an unguessable URL
// serving an SVG with the probe's status and 30-day uptime, nothing else.
type ProbeBadgeService interface {
	// CreateBadge makes a new badge token for the probe, replacing (and
	// revoking) any earlier one. Returns ENOTFOUND.
	CreateBadge(ctx context.Context, accountID, probeID string) (token string, err error)
	// DeleteBadge revokes the probe's badge. Returns ENOTFOUND.
	DeleteBadge(ctx context.Context, accountID, probeID string) error
	// BadgeSVG renders the badge of a token. Returns ENOTFOUND.
	BadgeSVG(ctx context.Context, token string) ([]byte, error)
	// AccountProbes lists every probe of the account (/mcp list_probes).
	AccountProbes(ctx context.Context, accountID string) ([]Probe, error)
}
