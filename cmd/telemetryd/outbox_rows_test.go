package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify/email"
)

// TestUndecryptableDeliveryFailsAlone: one account's Slack webhook is
// sealed with another key (a changed key, a restored database); in the
// same claimed batch, its delivery fails alone with undecryptable and
// every other one (the same account's Discord and email, another
// account's Slack) is sent.
func TestUndecryptableDeliveryFailsAlone(t *testing.T) {
	e := startDeliveryEnv(t, true, func(c *Config) { c.Alerting.Delivery.PollInterval = time.Hour })
	e.verify(t, e.email)
	ctx := context.Background()
	otherKey := make([]byte, alerting.SecretKeyLen)
	otherKey[0] = 7
	box, err := alerting.NewSecretBox(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	accountID := e.a.must(200, "GET", "/v1/account", e.token, nil)["id"].(string)
	sealed, err := box.Seal([]byte(slackHook), alerting.WebhookAssociatedData(accountID, "slack"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.PG.Pool.Exec(ctx, `UPDATE webhook_connections SET url_ciphertext = $2 WHERE account_id = $1 AND channel = 'slack'`,
		accountID, sealed); err != nil {
		t.Fatal(err)
	}
	bad := e.fire(t, "first and oldest", "slack", "discord", "email")
	other := &deliveryEnv{m: e.m, a: e.a}
	other.token, other.mcp, _ = e.a.newTenant("other")
	e.a.must(200, "PUT", "/v1/account/channels/slack/webhook", other.token, map[string]any{"url": slackHook})
	good := other.fire(t, "another account", "slack")

	if n, err := e.m.Outbox.Drain(ctx); err != nil || n != 4 {
		t.Fatalf("one claim: %d deliveries, %v", n, err)
	}
	e.m.Outbox.Wait()
	ds := e.deliveries(t, bad)
	if d := ds["slack"]; d["status"] != "failed" || d["last_error"] != "undecryptable" || num(d["attempts"]) != 0 {
		t.Errorf("undecryptable slack delivery: %v", d)
	}
	for _, c := range []string{"discord", "email"} {
		if ds[c]["status"] != "sent" {
			t.Errorf("%s delivery beside it: %v", c, ds[c])
		}
	}
	if d := other.deliveries(t, good)["slack"]; d["status"] != "sent" {
		t.Errorf("another account's slack delivery: %v", d)
	}
	// The channel test answers the same code rather than an error.
	if r := e.a.must(200, "POST", "/v1/account/channels/slack/test", e.token, nil); r["status"] != "failed" || r["error"] != "undecryptable" {
		t.Errorf("test of an undecryptable webhook: %v", r)
	}
}

// TestLongNonASCIISubjectFolded: an alert whose 200-character subject is
// all non-ASCII reaches a real SMTP server with every header line folded
// (encoded words on continuation lines, none near 998 octets), and reads
// back whole.
func TestLongNonASCIISubjectFolded(t *testing.T) {
	e := newDeliveryEnv(t, true)
	name := strings.Repeat("Ошибка ", 28)[:195]
	for !utf8.ValidString(name) {
		name = name[:len(name)-1]
	}
	rule := e.fire(t, name, "email")
	e.waitStatus(t, rule, "email", "sent", 15*time.Second)
	mails, err := e.md.emails()
	if err != nil || len(mails) != 1 {
		t.Fatalf("emails %v, %v", mails, err)
	}
	want := email.Subject(alerting.Message{Kind: alerting.KindFiring, RuleName: name, MCPName: "dlv server", Summary: "calls 0 < 1"})
	if mails[0].Subject != want {
		t.Errorf("subject %q, want %q", mails[0].Subject, want)
	}
	res, err := http.Get(e.md.web + "/email/" + mails[0].ID + "/source")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	head, _, ok := strings.Cut(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n\n")
	if !ok {
		t.Fatalf("no header end in %q", raw)
	}
	subjectLines := 0
	inSubject := false
	for _, l := range strings.Split(head, "\n") {
		if len(l) > 998 || len(l) > 100 {
			t.Errorf("header line of %d octets: %.120q", len(l), l)
		}
		switch {
		case strings.HasPrefix(l, "Subject:"):
			inSubject, subjectLines = true, 1
		case inSubject && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")):
			subjectLines++
			if w := strings.TrimSpace(l); !strings.HasPrefix(w, "=?utf-8?") {
				t.Errorf("continuation line is not an encoded word: %q", l)
			}
		default:
			inSubject = false
		}
	}
	if subjectLines < 5 {
		t.Errorf("subject on %d lines, want it folded:\n%s", subjectLines, head)
	}
}
