package email

import (
	"mime"
	"net/mail"
	"strings"
	"testing"

	"github.com/mcpscope/telemetry/alerting"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw  string
		mode string
		port int
		ok   bool
	}{
		{"smtp://mail.example.com", ModeSTARTTLS, 587, true},
		{"smtp://u:p%40ss@mail.example.com:2525", ModeSTARTTLS, 2525, true},
		{"smtps://mail.example.com", ModeImplicit, 465, true},
		{"smtp://localhost:1025?starttls=none", ModePlain, 1025, true},
		{"smtp://127.0.0.1:1025?starttls=none", ModePlain, 1025, true},
		{"smtp://[::1]:1025?starttls=none", ModePlain, 1025, true},
		{"smtp://mail.example.com:25?starttls=none", "", 0, false},
		{"smtp://10.0.0.5:25?starttls=none", "", 0, false},
		{"smtps://localhost?starttls=none", "", 0, false},
		{"smtp://mail.example.com?foo=bar", "", 0, false},
		{"http://mail.example.com", "", 0, false},
		{"smtp://:25", "", 0, false},
		{"smtp://mail.example.com:99999", "", 0, false},
		{"smtp://mail.example.com/path", "", 0, false},
	}
	for _, tt := range tests {
		s, err := ParseURL(tt.raw)
		if (err == nil) != tt.ok || (tt.ok && (s.Mode != tt.mode || s.Port != tt.port)) {
			t.Errorf("ParseURL(%q) = %+v, %v", tt.raw, s, err)
		}
		if err != nil && strings.Contains(err.Error(), "p%40ss") {
			t.Errorf("error quotes the URL: %v", err)
		}
	}
	if s, _ := ParseURL("smtp://u:p%40ss@mail.example.com"); s.User != "u" || s.Password != "p@ss" {
		t.Errorf("credentials %+v", s)
	}
}

func TestSubjectAndBody(t *testing.T) {
	m := alerting.Message{Kind: alerting.KindFiring, RuleName: "errors high\r\nBcc: x@evil", MCPName: "docs-server",
		Summary: "error rate 7.03% > 5%", Title: "Firing", Body: "<b>hi</b>", RuleURL: "https://t/app/r"}
	s := Subject(m)
	if s != "[Firing] errors high  Bcc: x@evil on docs-server: error rate 7.03% > 5%" {
		t.Errorf("subject %q", s)
	}
	raw, err := Build("Alerts <alerts@example.com>", alerting.Envelope{To: "a@example.com", MessageID: "msg_1", Messages: []alerting.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	txt := string(raw)
	for _, want := range []string{"Message-ID: <msg_1@example.com>", "multipart/alternative", "text/plain; charset=utf-8", "text/html; charset=utf-8", "&lt;b&gt;hi&lt;/b&gt;"} {
		if !strings.Contains(txt, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	head, _, _ := strings.Cut(txt, "\r\n\r\n")
	if strings.Contains(head, "\r\nBcc:") {
		t.Error("header injection through the rule name")
	}
}

// TestHeaderFolding: a 200-character non-ASCII subject is folded into
// encoded words on continuation lines, every header line well under 998
// octets, and decodes back to the subject.
func TestHeaderFolding(t *testing.T) {
	name := strings.Repeat("Ünïcödé règle ", 20)
	m := alerting.Message{Kind: alerting.KindFiring, RuleName: name, MCPName: "sérveur", Summary: "taux d'erreur 7 % > 5 %"}
	raw, err := Build("Alerts <alerts@example.com>", alerting.Envelope{To: "a@example.com", MessageID: "msg_1", Messages: []alerting.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	lines := strings.Split(head, "\r\n")
	for _, l := range lines {
		if len(l) > 90 {
			t.Errorf("header line of %d octets: %q", len(l), l)
		}
	}
	if len(lines) < 8 {
		t.Errorf("subject not folded: %d header lines", len(lines))
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	if got != Subject(m) {
		t.Errorf("subject decodes to %q, want %q", got, Subject(m))
	}
}
