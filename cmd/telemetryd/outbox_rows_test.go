package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
	t.Parallel()
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
	t.Parallel()
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

// TestSendBudgets: an account's email beyond
// alerting.email.max_per_account_hour waits, queued with a next attempt,
// rather than being sent or lost, and /metrics shows the bound; channel
// tests beyond a person's budget are 429 with Retry-After.
func TestSendBudgets(t *testing.T) {
	t.Parallel()
	e := startDeliveryEnv(t, true, func(c *Config) { c.Alerting.Email.MaxPerAccountHour = 2 })
	e.verify(t, e.email)
	e.md.clear(t)
	var rules []string
	for i := range 3 {
		rules = append(rules, e.fire(t, fmt.Sprintf("budget %d", i), "email"))
	}
	eventually(t, 15*time.Second, func() error {
		sent, waiting := 0, 0
		for _, r := range rules {
			d := e.deliveries(t, r)["email"]
			switch {
			case d["status"] == "sent":
				sent++
			case d["status"] == "queued" && d["next_attempt_at"] != nil && num(d["attempts"]) == 0:
				next, err := time.Parse(time.RFC3339Nano, d["next_attempt_at"].(string))
				if err != nil || time.Until(next) < 50*time.Minute {
					return fmt.Errorf("deferred delivery due at %v", d["next_attempt_at"])
				}
				waiting++
			}
		}
		if sent != 2 || waiting != 1 {
			return fmt.Errorf("%d sent, %d waiting; want 2 and 1", sent, waiting)
		}
		return nil
	})
	if mails, err := e.md.emails(); err != nil || len(mails) != 2 {
		t.Errorf("%d emails, %v; want 2", len(mails), err)
	}
	m := scrape(t, e.a.base+"/metrics")
	if m["telemetry_alert_email_max_per_account_hour"] != 2 || m[`telemetry_alert_deliveries_deferred_total{channel="email"}`] < 1 {
		t.Errorf("budget metrics: limit %v, deferred %v", m["telemetry_alert_email_max_per_account_hour"],
			m[`telemetry_alert_deliveries_deferred_total{channel="email"}`])
	}

	// Channel tests: 10 an hour per person.
	for i := range 10 {
		if r := e.a.must(200, "POST", "/v1/account/channels/slack/test", e.token, nil); r["status"] != "sent" {
			t.Fatalf("test %d: %v", i, r)
		}
	}
	req, _ := http.NewRequest("POST", e.a.base+"/v1/account/channels/slack/test", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode != 429 || ra < 1 {
		t.Errorf("11th test: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
}
