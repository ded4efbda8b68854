package main

import (
	"context"
	"testing"
	"time"
)

// TestRemovedMemberHoldsNothing: removing a person deletes their personal
// access tokens (re-adding them revives none) and fails their queued
// email (not_a_member); an admin's retry of it does not mail them, while
// the owner's delivery of the same alert is sent.
func TestRemovedMemberHoldsNothing(t *testing.T) {
	t.Parallel()
	// The outbox is driven by hand here: its job polls once an hour.
	e := startDeliveryEnv(t, true, func(c *Config) { c.Alerting.Delivery.PollInterval = time.Hour })
	e.verify(t, e.email)
	accountID := e.a.must(200, "GET", "/v1/account", e.token, nil)["id"].(string)

	bEmail := "member-" + e.email
	b := e.a.must(201, "POST", "/v1/auth/signup", "", map[string]any{"email": bEmail, "password": "a long password", "name": "B"})
	bID := b["user"].(map[string]any)["id"].(string)
	e.verify(t, bEmail)
	e.md.clear(t)
	e.a.must(201, "POST", "/v1/account/members", e.token, map[string]any{"email": bEmail, "role": "admin"})
	bSession := e.a.must(200, "POST", "/v1/auth/login", "", map[string]any{"email": bEmail, "password": "a long password", "account_id": accountID})["token"].(string)
	pat := e.a.must(201, "POST", "/v1/account/tokens", bSession, map[string]any{"name": "laptop", "scope": "read"})["token"].(string)
	e.a.must(200, "GET", "/v1/mcps", pat, nil)

	rule := e.fire(t, "calls low", "email")
	byRecipient := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, x := range e.a.must(200, "GET", "/v1/account/notifications?channel=email&limit=50", e.token, nil)["items"].([]any) {
			d := x.(map[string]any)
			if d["rule_id"] == rule {
				out[d["recipient_user_id"].(string)] = d
			}
		}
		return out
	}
	ds := byRecipient()
	if len(ds) != 2 || ds[bID]["status"] != "queued" {
		t.Fatalf("deliveries before the removal: %v", ds)
	}

	e.a.must(204, "DELETE", "/v1/account/members/"+bID, e.token, nil)
	if d := byRecipient()[bID]; d["status"] != "failed" || d["last_error"] != "not_a_member" {
		t.Errorf("removed person's queued delivery: %v", d)
	}
	// The admin retries it: the outbox still does not mail a non-member.
	e.a.must(200, "POST", "/v1/account/notifications/"+byRecipient()[bID]["id"].(string)+"/retry", e.token, nil)
	ctx := context.Background()
	eventually(t, 15*time.Second, func() error {
		if _, err := e.m.Outbox.Drain(ctx); err != nil {
			return err
		}
		e.m.Outbox.Wait()
		for _, d := range byRecipient() {
			if d["status"] == "queued" {
				return errString("still queued")
			}
		}
		return nil
	})
	ds = byRecipient()
	if d := ds[bID]; d["status"] != "failed" || d["last_error"] != "not_a_member" || num(d["attempts"]) != 0 {
		t.Errorf("retried delivery of a removed person: %v", d)
	}
	for uid, d := range ds {
		if uid != bID && d["status"] != "sent" {
			t.Errorf("the owner's delivery: %v", d)
		}
	}
	mails, err := e.md.emails()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mails {
		if len(m.To) > 0 && m.To[0].Address == bEmail {
			t.Errorf("a removed person got %q", m.Subject)
		}
	}
	if len(mails) != 1 {
		t.Errorf("%d emails, want the owner's one", len(mails))
	}

	// Re-added, with another role: the old token stays dead.
	e.a.must(201, "POST", "/v1/account/members", e.token, map[string]any{"email": bEmail, "role": "member"})
	if status, _ := e.a.do("GET", "/v1/mcps", pat, nil); status != 401 {
		t.Errorf("a removed person's token after re-adding them: %d", status)
	}
}
