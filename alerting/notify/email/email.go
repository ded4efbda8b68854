// Package email sends alerts by SMTP: STARTTLS required (plain only to a
// loopback server with ?starttls=none), or implicit TLS (smtps://), with
// optional PLAIN authentication; a multipart message with a text and an
// HTML part rendered from templates. It only builds and sends the
// message; the outbox decides on retries. See docs/delivery.md.
package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/netip"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// TLS modes of the SMTP connection.
const (
	ModeSTARTTLS = "starttls" // smtp://, the default: STARTTLS is required
	ModeImplicit = "tls"      // smtps://
	ModePlain    = "none"     // smtp://…?starttls=none, loopback hosts only
)

// Server is a parsed alerting.email.smtp_url.
type Server struct {
	Host     string
	Port     int
	Mode     string
	User     string
	Password string // never logged
}

// Addr is host:port.
func (s Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// ParseURL reads smtp://[user:password@]host:port[?starttls=none] or
// smtps://[user:password@]host:port. starttls=none is accepted only for a
// loopback host (localhost, 127.0.0.0/8, ::1): credentials and alerts
// never cross a network in clear. Errors never quote the URL (it may hold
// the password).
func ParseURL(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, errors.New("not a URL (smtp://[user:password@]host:port or smtps://…)")
	}
	var s Server
	switch u.Scheme {
	case "smtp":
		s.Mode, s.Port = ModeSTARTTLS, 587
	case "smtps":
		s.Mode, s.Port = ModeImplicit, 465
	default:
		return Server{}, errors.New("the scheme must be smtp:// (STARTTLS) or smtps:// (implicit TLS)")
	}
	s.Host = u.Hostname()
	if s.Host == "" || u.Opaque != "" {
		return Server{}, errors.New("a host is required")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Server{}, errors.New("the port must be 1-65535")
		}
		s.Port = n
	}
	if u.User != nil {
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	if u.Path != "" && u.Path != "/" {
		return Server{}, errors.New("no path is allowed")
	}
	for k, v := range u.Query() {
		switch {
		case k == "starttls" && len(v) == 1 && v[0] == "none" && u.Scheme == "smtp":
			if !loopback(s.Host) {
				return Server{}, errors.New("starttls=none is allowed only for a loopback host (localhost, 127.0.0.1, ::1)")
			}
			s.Mode = ModePlain
		default:
			return Server{}, fmt.Errorf("unknown or invalid parameter %q (only starttls=none, on smtp://)", k)
		}
	}
	return s, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Notifier sends alert emails through one SMTP server.
type Notifier struct {
	Server  Server
	From    string // alerting.email.from
	RootCAs *x509.CertPool
	// LocalName is sent in EHLO (default "localhost").
	LocalName string
}

var _ alerting.Notifier = (*Notifier)(nil)

// Notify implements alerting.Notifier: one email to e.To per envelope (the
// outbox never digests email). SMTP 5xx answers are permanent; 4xx,
// timeouts and connection errors are retried.
func (n *Notifier) Notify(ctx context.Context, e alerting.Envelope) (bool, error) {
	if _, err := mail.ParseAddress(e.To); err != nil || strings.ContainsAny(e.To, "\r\n") {
		return false, &alerting.SendError{Code: "invalid_recipient_address"}
	}
	msg, err := Build(n.From, e)
	if err != nil {
		return false, &alerting.SendError{Code: "message_error"}
	}
	return n.send(ctx, e.To, msg)
}

func (n *Notifier) send(ctx context.Context, to string, msg []byte) (bool, error) {
	s := n.Server
	tlsCfg := &tls.Config{ServerName: s.Host, RootCAs: n.RootCAs, MinVersion: tls.VersionTLS12}
	d := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return true, netErr(ctx, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if s.Mode == ModeImplicit {
		tc := tls.Client(conn, tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return true, netErr(ctx, err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		return smtpErr(ctx, err)
	}
	defer c.Close()
	local := n.LocalName
	if local == "" {
		local = "localhost"
	}
	if err := c.Hello(local); err != nil {
		return smtpErr(ctx, err)
	}
	if s.Mode == ModeSTARTTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return false, &alerting.SendError{Code: "smtp_starttls_not_offered"}
		}
		if err := c.StartTLS(tlsCfg); err != nil {
			return true, netErr(ctx, err)
		}
	}
	if s.User != "" {
		if err := c.Auth(smtp.PlainAuth("", s.User, s.Password, s.Host)); err != nil {
			retry, _ := smtpErr(ctx, err)
			return retry, &alerting.SendError{Code: "smtp_auth_failed"}
		}
	}
	if err := c.Mail(envelopeAddress(n.From)); err != nil {
		return smtpErr(ctx, err)
	}
	if err := c.Rcpt(to); err != nil {
		return smtpErr(ctx, err)
	}
	w, err := c.Data()
	if err != nil {
		return smtpErr(ctx, err)
	}
	if _, err := w.Write(msg); err != nil {
		return smtpErr(ctx, err)
	}
	if err := w.Close(); err != nil {
		return smtpErr(ctx, err)
	}
	_ = c.Quit()
	return false, nil
}

func envelopeAddress(from string) string {
	if a, err := mail.ParseAddress(from); err == nil {
		return a.Address
	}
	return from
}

// smtpErr: a 5xx reply is permanent, a 4xx transient; the recorded code is
// the reply code only (the reply text may echo addresses).
func smtpErr(ctx context.Context, err error) (bool, error) {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code < 500, &alerting.SendError{Code: "smtp_" + strconv.Itoa(te.Code)}
	}
	return true, netErr(ctx, err)
}

func netErr(ctx context.Context, err error) error {
	var ne net.Error
	switch {
	case ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()):
		return &alerting.SendError{Code: alerting.ErrCodeTimeout}
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return &alerting.SendError{Code: "tls_certificate_error"}
	}
	return &alerting.SendError{Code: "smtp_connection_failed"}
}

// Subject is the subject line: "[Firing] errors high on docs-server:
// error rate 7.03% > 5%", control characters removed (no header
// injection), at most 200 characters.
func Subject(m alerting.Message) string {
	tag := map[string]string{alerting.KindFiring: "[Firing]", alerting.KindResolved: "[Resolved]", alerting.KindTest: "[Test]"}[m.Kind]
	s := tag + " " + m.RuleName
	if m.MCPName != "" {
		s += " on " + m.MCPName
	}
	if m.Summary != "" {
		s += ": " + m.Summary
	}
	if m.Kind == alerting.KindTest {
		s = tag + " " + m.Title
	}
	if m.Kind == alerting.KindVerification {
		s = m.Title
	}
	return alerting.Ellipsis(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s), 200)
}

var textTmpl = texttemplate.Must(texttemplate.New("text").Parse(`{{.Title}}

{{.Body}}
{{if .Summary}}
Measured: {{.Summary}}
{{end}}{{if .MCPName}}MCP: {{.MCPName}}
{{end}}{{if .RuleName}}Rule: {{.RuleName}}
{{end}}
{{if .ActionURL}}{{.ActionLabel}}: {{.ActionURL}}
{{end}}{{if .RuleURL}}View the rule: {{.RuleURL}}
{{end}}{{if .SettingsURL}}Change where you get alerts: {{.SettingsURL}}
{{end}}`))

var htmlTmpl = htmltemplate.Must(htmltemplate.New("html").Parse(`<!doctype html>
<html><body style="font-family:sans-serif">
<h2 style="color:{{if eq .Kind "resolved"}}#2eb67d{{else if eq .Kind "firing"}}#e01e5a{{else}}#5865f2{{end}}">{{.Title}}</h2>
<p>{{.Body}}</p>
{{if .Summary}}<p><strong>Measured:</strong> {{.Summary}}</p>{{end}}
<table>{{if .MCPName}}<tr><td>MCP</td><td>{{.MCPName}}</td></tr>{{end}}{{if .RuleName}}<tr><td>Rule</td><td>{{.RuleName}}</td></tr>{{end}}</table>
{{if .ActionURL}}<p><a href="{{.ActionURL}}">{{.ActionLabel}}</a></p>{{end}}
{{if .RuleURL}}<p><a href="{{.RuleURL}}">View the rule</a></p>{{end}}
{{if .SettingsURL}}<p style="font-size:small"><a href="{{.SettingsURL}}">Change where you get alerts</a></p>{{end}}
</body></html>
`))

// Build renders the message of an envelope's first message: headers, a
// text part and an HTML part (user input escaped by html/template).
func Build(from string, e alerting.Envelope) ([]byte, error) {
	if len(e.Messages) == 0 {
		return nil, errors.New("email: no message")
	}
	m := e.Messages[0]
	var text, html bytes.Buffer
	if err := textTmpl.Execute(&text, m); err != nil {
		return nil, err
	}
	if err := htmlTmpl.Execute(&html, m); err != nil {
		return nil, err
	}
	var buf, body bytes.Buffer
	mw := multipart.NewWriter(&body)
	domain := "localhost"
	if a, err := mail.ParseAddress(from); err == nil {
		if i := strings.LastIndexByte(a.Address, '@'); i >= 0 {
			domain = a.Address[i+1:]
		}
	}
	hdr := func(k, v string) { writeHeader(&buf, k, v) }
	hdr("From", from)
	hdr("To", e.To)
	hdr("Subject", mime.QEncoding.Encode("utf-8", Subject(m)))
	hdr("Date", time.Now().UTC().Format(time.RFC1123Z))
	hdr("Message-ID", "<"+e.MessageID+"@"+domain+">")
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "multipart/alternative; boundary="+mw.Boundary())
	hdr("Auto-Submitted", "auto-generated")
	buf.WriteString("\r\n")
	for _, part := range []struct {
		ctype string
		body  []byte
	}{{"text/plain; charset=utf-8", text.Bytes()}, {"text/html; charset=utf-8", html.Bytes()}} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {part.ctype}, "Content-Transfer-Encoding": {"quoted-printable"}})
		if err != nil {
			return nil, err
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := qp.Write(part.body); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	buf.Write(body.Bytes())
	return buf.Bytes(), nil
}

// foldAt is where header lines are folded (RFC 5322 2.1.1: SHOULD be at
// most 78 characters, MUST be at most 998).
const foldAt = 78

// writeHeader writes "name: value" folded per RFC 5322: a line break is
// put before a space wherever the line would pass foldAt, so that
// unfolding (removing the CRLFs) gives the value back exactly. Encoded
// words (mime.QEncoding, at most 75 characters each, separated by spaces)
// each go on a line of their own when they do not fit, so no line comes
// near 998 octets.
func writeHeader(buf *bytes.Buffer, name, value string) {
	line := len(name) + 1
	buf.WriteString(name)
	buf.WriteByte(':')
	for i, tok := range strings.Split(value, " ") {
		if i > 0 && line+1+len(tok) > foldAt {
			buf.WriteString("\r\n")
			line = 0
		}
		buf.WriteByte(' ')
		buf.WriteString(tok)
		line += 1 + len(tok)
	}
	buf.WriteString("\r\n")
}
