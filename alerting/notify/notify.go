// Package notify is the delivery wing: the outbox that drains the
// deliveries the rule pass queued (outbox.go, budget.go, retry.go) and what
// the senders of alerting/notify/* share: the
// outbound HTTP client (egress proxy, extra CA roots, no redirects, no
// private addresses) and the retrier that turns an HTTP answer into retry
// or not. Each sender package only builds and sends its payload, after
// prometheus/alertmanager's notify design. See docs/delivery.md.
package notify

import (
	"bytes"
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
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// Outbound configures the outbound connections of the senders.
type Outbound struct {
	// ProxyURL is an HTTP CONNECT proxy for every webhook request ("" for
	// direct connections; HTTPS_PROXY is never read).
	ProxyURL string
	// CAFile holds extra PEM roots trusted for outbound TLS, added to the
	// system's.
	CAFile string
}

// RootCAs is the system's roots plus those of CAFile.
func (o Outbound) RootCAs() (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if o.CAFile == "" {
		return pool, nil
	}
	pem, err := os.ReadFile(o.CAFile)
	if err != nil {
		return nil, fmt.Errorf("alerting.outbound.ca_file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("alerting.outbound.ca_file %s: no PEM certificate in it", o.CAFile)
	}
	return pool, nil
}

// Validate checks the proxy URL and the CA file.
func (o Outbound) Validate() error {
	if o.ProxyURL != "" {
		u, err := url.Parse(o.ProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("alerting.outbound.proxy_url: must be an http:// or https:// proxy address")
		}
	}
	_, err := o.RootCAs()
	return err
}

// HTTPClient returns the client the chat senders post with: the proxy (if
// any), the roots, no redirects followed, and, without a proxy, no
// connection to a private, loopback, link-local or otherwise internal
// address, checked on the resolved address at connect time (so DNS cannot
// steer it inside).
func (o Outbound) HTTPClient() (*http.Client, error) {
	roots, err := o.RootCAs()
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	if o.ProxyURL != "" {
		pu, err := url.Parse(o.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("alerting.outbound.proxy_url: %w", err)
		}
		tr.Proxy = http.ProxyURL(pu)
	} else {
		dialer.Control = refuseInternal
	}
	tr.DialContext = dialer.DialContext
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// errInternalAddress is a resolved address the senders may not reach.
var errInternalAddress = errors.New("internal address refused")

func refuseInternal(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return errInternalAddress
	}
	if Internal(ap.Addr()) {
		return errInternalAddress
	}
	return nil
}

// Internal reports whether a is an address no webhook may resolve to:
// loopback, private, link-local, unspecified, multicast, CGNAT, or an
// IPv4-mapped form of one.
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range internalPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), // CGNAT
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 of anything
}

// PostWebhook checks rawURL again with the webhook host rule of channel
// (the stored URL is re-checked before every send), encodes payload and
// posts it (PostJSON).
func PostWebhook(ctx context.Context, c *http.Client, channel, rawURL string, payload any) (int, http.Header, []byte, error) {
	if _, err := alerting.ValidateWebhookURL(channel, rawURL); err != nil {
		return 0, nil, nil, &alerting.SendError{Code: "webhook_host_not_allowed"}
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return 0, nil, nil, &alerting.SendError{Code: "payload_error"}
	}
	return PostJSON(ctx, c, rawURL, body)
}

// Retryable reports whether an error of PostWebhook or PostJSON (no
// answer at all) is worth retrying: a transport failure is, a URL that
// fails the host check or a payload that does not encode is not.
func Retryable(err error) bool {
	var se *alerting.SendError
	if errors.As(err, &se) {
		switch se.Code {
		case "webhook_host_not_allowed", "payload_error", "bad_request", "internal_address_refused":
			return false
		}
	}
	return true
}

// PostJSON posts body to rawURL and returns the answer's status, headers
// and up to 4 KiB of its body. Errors are *alerting.SendError with a code
// that never contains the URL: transport errors are retried.
func PostJSON(ctx context.Context, c *http.Client, rawURL string, body []byte) (int, http.Header, []byte, error) {
	return PostJSONHeaders(ctx, c, rawURL, body, nil)
}

// PostJSONHeaders is PostJSON with extra request headers (a signature).
func PostJSONHeaders(ctx context.Context, c *http.Client, rawURL string, body []byte, headers http.Header) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, &alerting.SendError{Code: "bad_request"}
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "telemetryd-alerts/1")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, data, nil
}

// transportError maps a client error to a code without the URL the
// *url.Error would print.
func transportError(ctx context.Context, err error) error {
	var ne net.Error
	switch {
	case ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()):
		return &alerting.SendError{Code: alerting.ErrCodeTimeout}
	case errors.Is(err, errInternalAddress):
		return &alerting.SendError{Code: "internal_address_refused"}
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return &alerting.SendError{Code: "tls_certificate_error"}
	}
	return &alerting.SendError{Code: "connection_failed"}
}

// Retrier classifies an HTTP answer: 2xx is success; 429 and 5xx (and 408)
// are retried, honouring Retry-After; other 4xx are permanent. The
// provider's own token (e.g. Slack's "no_service") goes in the code.
func Retrier(status int, h http.Header, token string) (bool, error) {
	if status >= 200 && status < 300 {
		return false, nil
	}
	code := "http_" + strconv.Itoa(status)
	if token != "" {
		code += ": " + alerting.CleanCode(token)
	}
	se := &alerting.SendError{Code: code}
	switch {
	case status == http.StatusTooManyRequests:
		se.RetryAfter = RetryAfter(h, time.Now())
		if se.RetryAfter == 0 {
			se.RetryAfter = time.Second
		}
		return true, se
	case status >= 500 || status == http.StatusRequestTimeout:
		se.RetryAfter = RetryAfter(h, time.Now())
		return true, se
	}
	return false, se
}

// RetryAfter reads a Retry-After header: seconds (fractions allowed, as
// Discord sends) or an HTTP date; 0 when absent or malformed, at most a
// day (the outbox caps it further).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(min(f, 86400) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}
