// Package probe checks MCP servers from the outside (docs/probes.md): one
// check speaks MCP over Streamable HTTP as a client would (server/discover
// for servers of the 2026-07-28 protocol, else initialize,
// notifications/initialized, then tools/list, and the session closed with
// an HTTP DELETE), through the outbound guard; Runner schedules the checks
// of every instance under a lease in PostgreSQL.
package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

// ClientName is how the prober names itself to the servers it checks
// (clientInfo of initialize and of server/discover's _meta), so that their
// telemetry can tell its calls from real clients'.
const ClientName = "mcpscope-prober"

// ModernProtocol is the protocol revision a check asks for first, with
// server/discover; a server that does not answer it is asked again with
// initialize, under the newest revision it speaks.
const ModernProtocol = "2026-07-28"

// DefaultMaxAnswerBytes caps one HTTP answer of a check.
const DefaultMaxAnswerBytes = 1 << 20

// Checker runs checks. The zero value refuses internal addresses and
// trusts the system's roots.
type Checker struct {
	// AllowPrivate lets checks reach loopback, private, link-local and
	// metadata addresses (probes.allow_private; tests and on-premises
	// installations only).
	AllowPrivate bool
	// RootCAs, when set, replaces the system's roots (tests: a test CA).
	RootCAs *x509.CertPool
	// MaxAnswerBytes caps each HTTP answer (default DefaultMaxAnswerBytes).
	MaxAnswerBytes int64
	// Version is announced in clientInfo (default "dev").
	Version string
	// Resolver resolves host names (default net.DefaultResolver).
	Resolver *net.Resolver
}

// Target is what one check reaches.
type Target struct {
	URL     string
	Headers map[string]string
	Timeout time.Duration
}

// errRefused is a resolved address the prober may not reach.
var errRefused = errors.New("address is loopback, private, link-local or otherwise internal")

// CheckURL is the guard of create time (the dialer checks again at every
// run, on the address it connects to): the URL parses (ParseProbeURL) and,
// unless AllowPrivate, every address its host resolves to is public.
// Returns EINVALID on body.url.
func (c *Checker) CheckURL(ctx context.Context, raw string) error {
	u, err := alerting.ParseProbeURL(raw)
	if err != nil || c.AllowPrivate {
		return err
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ips, err := c.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil {
			return urlError("the host name %q does not resolve", host)
		}
		addrs = ips
	}
	for _, a := range addrs {
		if notify.Internal(a) {
			return urlError("the host %q resolves to %s, a loopback, private, link-local or metadata address, which probes may not reach", host, a)
		}
	}
	return nil
}

func urlError(format string, args ...any) error {
	return telemetry.FieldError(telemetry.EINVALID, "body.url", format, args...)
}

func (c *Checker) resolver() *net.Resolver {
	if c.Resolver != nil {
		return c.Resolver
	}
	return net.DefaultResolver
}

// observer keeps what the HTTP layer saw during one check, to classify
// a failure the SDK reports only as text.
type observer struct {
	mu      sync.Mutex
	status  int   // last non-2xx status
	netErr  error // last transport error
	expires time.Time
	tooBig  bool
}

func (o *observer) set(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f()
}

// roundTripper adds the probe's headers, records what happened, caps
// answers and follows no redirect (the client's CheckRedirect).
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	ua      string
	obs     *observer
	max     int64
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", rt.ua)
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		rt.obs.set(func() { rt.obs.netErr = err })
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if req.Method != http.MethodDelete {
			rt.obs.set(func() { rt.obs.status = resp.StatusCode })
		}
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: rt.max, obs: rt.obs}
	return resp, nil
}

// cappedBody fails a read past the cap, so one answer cannot take the
// prober's memory.
type cappedBody struct {
	io.ReadCloser
	left int64
	obs  *observer
}

var errTooBig = errors.New("answer larger than the prober reads")

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.obs.set(func() { b.obs.tooBig = true })
		return 0, errTooBig
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// httpClient builds the client of one check: a transport of its own (a
// check measures a fresh connection, and leaves none open), the guard on
// every dial, no redirects.
func (c *Checker) httpClient(t Target, obs *observer) (*http.Client, *http.Transport) {
	dialer := &net.Dialer{Timeout: t.Timeout, Resolver: c.Resolver}
	if !c.AllowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || notify.Internal(ap.Addr()) {
				return errRefused
			}
			return nil
		}
	}
	tr := &http.Transport{
		DialContext: dialer.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) > 0 {
					exp := cs.PeerCertificates[0].NotAfter
					obs.set(func() { obs.expires = exp })
				}
				return nil
			}},
		TLSHandshakeTimeout:   t.Timeout,
		ResponseHeaderTimeout: t.Timeout,
		MaxIdleConnsPerHost:   2,
		ForceAttemptHTTP2:     true,
	}
	maxBytes := c.MaxAnswerBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxAnswerBytes
	}
	version := c.Version
	if version == "" {
		version = "dev"
	}
	return &http.Client{
		Transport: &roundTripper{base: tr, headers: t.Headers, ua: ClientName + "/" + version, obs: obs, max: maxBytes},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, tr
}

// Check runs one check of t and reports what it found; it never fails,
// a failure is a result.
func (c *Checker) Check(ctx context.Context, t Target) alerting.ProbeCheck {
	if t.Timeout <= 0 {
		t.Timeout = time.Duration(alerting.DefaultProbeTimeoutMs) * time.Millisecond
	}
	start := time.Now()
	res := alerting.ProbeCheck{At: start.UTC()}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	obs := &observer{}
	hc, tr := c.httpClient(t, obs)
	defer tr.CloseIdleConnections()
	err := c.speak(ctx, hc, t, &res)
	res.LatencyMs = float64(time.Since(start).Microseconds()) / 1000
	obs.mu.Lock()
	res.TLSExpiresAt = obs.expires
	obs.mu.Unlock()
	if err == nil {
		res.OK = true
		return res
	}
	res.ErrorKind, res.Error = classify(ctx, err, obs)
	res.Tools, res.SchemaHash = nil, ""
	return res
}

// speak is the MCP conversation of one check.
func (c *Checker) speak(ctx context.Context, hc *http.Client, t Target, res *alerting.ProbeCheck) error {
	version := c.Version
	if version == "" {
		version = "dev"
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: ClientName, Version: version}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: ModernProtocol})
	if err != nil {
		return err
	}
	// Closing ends the session politely: an HTTP DELETE with its
	// Mcp-Session-Id when the server gave one.
	defer func() { _ = cs.Close() }()
	if ir := cs.InitializeResult(); ir != nil {
		res.ProtocolVersion = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			res.ServerVersion = ir.ServerInfo.Version
		}
	}
	var tools []alerting.ProbeTool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if tool == nil {
			continue
		}
		if len(tools) >= analytics.MaxInventoryTools {
			break
		}
		tools = append(tools, alerting.ProbeTool{Name: tool.Name, SchemaHash: toolHash(tool)})
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	res.Tools = tools
	res.SchemaHash = listHash(tools)
	if tools == nil {
		res.Tools = []alerting.ProbeTool{}
	}
	return nil
}

// toolHash is the tool's canonical schema hash, as the SDKs report it
// (client.SchemaHash of description, inputSchema and annotations).
func toolHash(tool *mcp.Tool) string {
	raw, err := json.Marshal(tool)
	if err != nil {
		return ""
	}
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return ""
	}
	part := map[string]any{}
	for _, k := range []string{"description", "inputSchema", "annotations"} {
		if v, ok := all[k]; ok && v != nil {
			part[k] = v
		}
	}
	return client.SchemaHash(part)
}

// listHash is the schema hash of a whole tools/list answer: the hash of
// the canonical JSON of its [name, hash] pairs in name order.
func listHash(tools []alerting.ProbeTool) string {
	pairs := make([]any, 0, len(tools))
	for _, t := range tools {
		pairs = append(pairs, []any{t.Name, t.SchemaHash})
	}
	return client.SchemaHash(map[string]any{"tools": pairs})
}

// classify names a failed check's kind and a detail without the URL or
// the headers.
func classify(ctx context.Context, err error, obs *observer) (kind, detail string) {
	obs.mu.Lock()
	status, netErr, tooBig := obs.status, obs.netErr, obs.tooBig
	obs.mu.Unlock()
	if netErr == nil {
		netErr = err
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var uaErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invErr x509.CertificateInvalidError
	switch {
	case errors.Is(netErr, errRefused):
		return alerting.ProbeErrConnect, "address refused: " + errRefused.Error()
	case errors.As(netErr, &dnsErr):
		if dnsErr.IsTimeout {
			return alerting.ProbeErrTimeout, "DNS lookup timed out"
		}
		return alerting.ProbeErrDNS, "no such host"
	case errors.As(netErr, &certErr) || errors.As(netErr, &uaErr) || errors.As(netErr, &hostErr) || errors.As(netErr, &invErr):
		return alerting.ProbeErrTLS, "certificate not trusted: " + short(netErr)
	case errors.As(netErr, &recErr):
		return alerting.ProbeErrTLS, "the server does not speak TLS"
	case errors.Is(netErr, syscall.ECONNREFUSED):
		return alerting.ProbeErrConnect, "connection refused"
	case errors.Is(netErr, syscall.ECONNRESET):
		return alerting.ProbeErrConnect, "connection reset"
	case errors.Is(netErr, syscall.EHOSTUNREACH), errors.Is(netErr, syscall.ENETUNREACH):
		return alerting.ProbeErrConnect, "host unreachable"
	case ctx.Err() != nil || errors.Is(netErr, context.DeadlineExceeded) || isTimeout(netErr):
		return alerting.ProbeErrTimeout, "no answer within the probe's timeout"
	case strings.Contains(netErr.Error(), "tls:"):
		return alerting.ProbeErrTLS, short(netErr)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return alerting.ProbeErrAuth, fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	case status != 0:
		return alerting.ProbeErrHTTPStatus, fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	case tooBig:
		return alerting.ProbeErrProtocol, "an answer was larger than the prober reads"
	}
	var opErr *net.OpError
	if errors.As(netErr, &opErr) {
		return alerting.ProbeErrConnect, short(opErr.Err)
	}
	return alerting.ProbeErrProtocol, short(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// short is an error's text without any URL in it (the URL may carry a
// token in its query), cut to a readable length.
func short(err error) string {
	s := err.Error()
	var ue interface{ Unwrap() error }
	for errors.As(err, &ue) && strings.Contains(s, "://") {
		inner := ue.Unwrap()
		if inner == nil {
			break
		}
		err, s = inner, inner.Error()
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = "the server's answer is not MCP"
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
