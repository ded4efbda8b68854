package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/postgres"
)

var verifyTokenRE = regexp.MustCompile(`#token=(evt_[0-9A-Za-z]+)`)

// verificationTokens waits until MailDev holds at least n verification
// messages to addr and returns their tokens, oldest first.
func (m mailDev) verificationTokens(t *testing.T, addr string, n int) []string {
	t.Helper()
	var tokens []string
	eventually(t, 10*time.Second, func() error {
		mails, err := m.emails()
		if err != nil {
			return err
		}
		tokens = tokens[:0]
		for _, e := range mails {
			if len(e.To) == 1 && strings.EqualFold(e.To[0].Address, addr) && e.Subject == "Confirm your email address" {
				if mm := verifyTokenRE.FindStringSubmatch(e.Text); mm != nil {
					tokens = append(tokens, mm[1])
				}
			}
		}
		if len(tokens) < n {
			return fmt.Errorf("%d verification messages to %s, want %d", len(tokens), addr, n)
		}
		return nil
	})
	return tokens
}

// clear deletes every email MailDev holds.
func (m mailDev) clear(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, m.web+"/email/all", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}

// verify opens the link of the latest verification message to addr.
func (e *deliveryEnv) verify(t *testing.T, addr string) {
	t.Helper()
	tokens := e.md.verificationTokens(t, addr, 1)
	p := e.a.must(200, "POST", "/v1/auth/verify", "", map[string]any{"token": tokens[len(tokens)-1]})
	if p["email_verified"] != true || p["email"] != addr {
		t.Fatalf("verify answered %v", p)
	}
}

// TestEmailOnlyToVerifiedAddresses: someone signs up with an address they
// do not own and tries every email path (a channel test, an alert to
// their own rule with renotify, a resolve notice, re-sends): MailDev
// reads back nothing but verification messages, each delivery ends failed
// with address_unverified. Then the owner verifies (a replaced or spent
// token does not work), and email flows; changing the address makes it
// unverified again.
func TestEmailOnlyToVerifiedAddresses(t *testing.T) {
	t.Parallel()
	e := startDeliveryEnv(t, true, nil)
	victim := e.email
	if p := e.a.must(200, "GET", "/v1/account/profile", e.token, nil); p["email_verified"] != false {
		t.Fatalf("new address: profile %v", p)
	}
	members := e.a.must(200, "GET", "/v1/account/members", e.token, nil)["items"].([]any)
	if m := members[0].(map[string]any); m["email_verified"] != false {
		t.Fatalf("member %v", m)
	}
	first := e.md.verificationTokens(t, victim, 1)[0]

	// Every email path, as the attacker.
	if r := e.a.must(200, "POST", "/v1/account/channels/email/test", e.token, nil); r["status"] != "failed" || r["error"] != "address_unverified" {
		t.Errorf("channel test to an unverified address: %v", r)
	}
	rule := e.fireWith(t, map[string]any{"name": "URGENT: your bank account is locked, call +1-555-0100",
		"channels": []string{"email"}, "renotify_minutes": 5, "notify_on_resolve": true})
	if d := e.waitStatus(t, rule, "email", "failed", 15*time.Second); d["last_error"] != "address_unverified" || num(d["attempts"]) != 0 {
		t.Errorf("alert email: %v", d)
	}
	// Renotify (due once renotify_minutes passed) and the resolve notice of
	// a disabled rule take the same way.
	if _, err := e.m.PG.Pool.Exec(context.Background(), `UPDATE rules SET last_fired_at = now() - interval '6 minutes' WHERE id = $1`, rule); err != nil {
		t.Fatal(err)
	}
	if n, err := postgres.NewEvaluationStore(e.m.PG).Renotify(context.Background(), time.Now()); err != nil || n != 1 {
		t.Fatalf("renotify: %d, %v", n, err)
	}
	e.a.must(200, "PATCH", "/v1/rules/"+rule, e.token, map[string]any{"enabled": false})
	eventually(t, 15*time.Second, func() error {
		n := 0
		for _, x := range e.a.must(200, "GET", "/v1/account/notifications?channel=email&limit=50", e.token, nil)["items"].([]any) {
			d := x.(map[string]any)
			if d["status"] != "failed" || d["last_error"] != "address_unverified" {
				return fmt.Errorf("email delivery %v", d)
			}
			n++
		}
		if n != 3 {
			return fmt.Errorf("%d email deliveries, want 3 (firing, renotify, resolved)", n)
		}
		return nil
	})
	// Re-sending is limited to one a minute (the signup's counts).
	status, body := e.a.do("POST", "/v1/account/profile/verification", e.token, nil)
	if status != 429 {
		t.Errorf("re-send within a minute: %d %v", status, body)
	}
	if _, err := e.m.PG.Pool.Exec(context.Background(), `UPDATE users SET verification_sent_at = now() - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	e.a.must(202, "POST", "/v1/account/profile/verification", e.token, nil)
	tokens := e.md.verificationTokens(t, victim, 2)
	mails, err := e.md.emails()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mails {
		if m.Subject != "Confirm your email address" || strings.Contains(m.Text, "bank") {
			t.Errorf("an unverified address got %q:\n%s", m.Subject, m.Text)
		}
	}
	if len(mails) != 2 {
		t.Errorf("%d emails, want the 2 verification messages", len(mails))
	}

	// The owner of the address verifies: the replaced token and a spent
	// one do not work.
	if status, body := e.a.do("POST", "/v1/auth/verify", "", map[string]any{"token": first}); status != 422 {
		t.Errorf("replaced token: %d %v", status, body)
	}
	e.a.must(200, "POST", "/v1/auth/verify", "", map[string]any{"token": tokens[len(tokens)-1]})
	if status, _ := e.a.do("POST", "/v1/auth/verify", "", map[string]any{"token": tokens[len(tokens)-1]}); status != 422 {
		t.Errorf("spent token: %d", status)
	}
	if p := e.a.must(200, "GET", "/v1/account/profile", e.token, nil); p["email_verified"] != true {
		t.Errorf("verified: profile %v", p)
	}
	e.md.clear(t)
	if r := e.a.must(200, "POST", "/v1/account/channels/email/test", e.token, nil); r["status"] != "sent" {
		t.Errorf("channel test to a verified address: %v", r)
	}
	rule2 := e.fire(t, "calls low", "email")
	e.waitStatus(t, rule2, "email", "sent", 15*time.Second)

	// A new address is unverified again and gets its own message.
	other := "moved-" + victim
	if p := e.a.must(200, "PATCH", "/v1/account/profile", e.token, map[string]any{"email": other}); p["email_verified"] != false {
		t.Errorf("changed address: %v", p)
	}
	e.md.verificationTokens(t, other, 1)
	if r := e.a.must(200, "POST", "/v1/account/channels/email/test", e.token, nil); r["error"] != "address_unverified" {
		t.Errorf("channel test after the change: %v", r)
	}
}
