package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// Seed §2 rule 2: the catalogue lists every destination, including those
// not connected; a person who never saved preferences hears everywhere.
func TestChannelsListEveryDestinationConnectedOrNot(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	chans, prefs, err := s.Channels.Channels(context.Background(), tm.AccountID, tm.Users[0])
	if err != nil {
		t.Fatal(err)
	}
	if prefs != alerting.DefaultPreferences() {
		t.Errorf("preferences %+v", prefs)
	}
	var ids []string
	for _, c := range chans {
		ids = append(ids, c.ID)
		if c.WebhookHint != nil || (c.Scope == alerting.ScopeTeam) == c.Connected {
			t.Errorf("channel %+v", c)
		}
	}
	if strings.Join(ids, ",") != strings.Join(alerting.ChannelIDs(), ",") || !strings.HasPrefix(strings.Join(ids, ","), "in_app,email,slack,discord") {
		t.Fatalf("channels %v", ids)
	}
}

// PUT /v1/account/channels merges: only the switches sent change, for this
// person in this account only.
func TestPreferencesMergeOnlyTheSwitchesSent(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 2)
	s := newStores(t, db, nil)
	ctx := context.Background()
	f, tr := false, true
	steps := []struct {
		upd  alerting.PreferencesUpdate
		want alerting.Preferences
	}{
		{alerting.PreferencesUpdate{Email: &f}, alerting.Preferences{InApp: true, Email: false}},
		{alerting.PreferencesUpdate{InApp: &f}, alerting.Preferences{InApp: false, Email: false}},
		{alerting.PreferencesUpdate{}, alerting.Preferences{InApp: false, Email: false}},
		{alerting.PreferencesUpdate{Email: &tr}, alerting.Preferences{InApp: false, Email: true}},
	}
	for i, st := range steps {
		chans, prefs, err := s.Channels.UpdatePreferences(ctx, tm.AccountID, tm.Users[0], st.upd)
		if err != nil || prefs != st.want || len(chans) != len(alerting.ChannelIDs()) {
			t.Fatalf("step %d: %+v, %v; want %+v", i, prefs, err, st.want)
		}
	}
	if _, prefs, _ := s.Channels.Channels(ctx, tm.AccountID, tm.Users[1]); prefs != alerting.DefaultPreferences() {
		t.Fatalf("another person's preferences changed: %+v", prefs)
	}
	other := testdb.NewTeam(t, db, 1)
	testdb.Exec(t, db, `INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, 'member')`, other.AccountID, tm.Users[0])
	if _, prefs, _ := s.Channels.Channels(ctx, other.AccountID, tm.Users[0]); prefs != alerting.DefaultPreferences() {
		t.Fatalf("preferences leaked to another account: %+v", prefs)
	}
}

// Seed §2 rule 1: a stored webhook URL is never returned by any read, only
// the masked hint; at rest it is ciphertext bound to account and channel.
func TestWebhookURLIsSealedAndNeverReturned(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	ctx := context.Background()
	const secret = "abcdefghijklmnopqrstuvwx"
	hint, err := s.Channels.ConnectWebhook(ctx, tm.AccountID, tm.Users[0], alerting.ChannelSlack, slackURL)
	if err != nil {
		t.Fatal(err)
	}
	if hint != "hooks.slack.com/services/T0001/B0001/"+alerting.WebhookMask {
		t.Fatalf("hint %q", hint)
	}
	chans, _, err := s.Channels.Channels(ctx, tm.AccountID, tm.Users[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chans {
		switch c.ID {
		case alerting.ChannelSlack:
			if !c.Connected || c.WebhookHint == nil || *c.WebhookHint != hint {
				t.Errorf("slack %+v", c)
			}
		case alerting.ChannelDiscord:
			if c.Connected || c.WebhookHint != nil {
				t.Errorf("discord %+v", c)
			}
		}
	}
	var sealed []byte
	var createdBy string
	if err := db.Pool.QueryRow(ctx, `SELECT url_ciphertext, created_by FROM webhook_connections WHERE account_id = $1`, tm.AccountID).Scan(&sealed, &createdBy); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(secret)) || bytes.Contains(sealed, []byte("hooks.slack.com")) || createdBy != tm.Users[0] {
		t.Fatalf("stored in clear or without its author: %q %s", sealed, createdBy)
	}
	if u, err := s.Channels.WebhookURL(ctx, tm.AccountID, alerting.ChannelSlack); err != nil || u != slackURL {
		t.Fatalf("opened %q, %v", u, err)
	}
	// A ciphertext copied into another account's row does not open.
	other := testdb.NewTeam(t, db, 1)
	testdb.Exec(t, db, `INSERT INTO webhook_connections (account_id, channel, url_ciphertext, hint) VALUES ($1, 'slack', $2, 'x')`, other.AccountID, sealed)
	if _, err := s.Channels.WebhookURL(ctx, other.AccountID, alerting.ChannelSlack); err == nil {
		t.Fatal("a copied ciphertext opened under another account")
	}
	// Reconnecting replaces the webhook; disconnecting removes it and is
	// idempotent.
	if _, err := s.Channels.ConnectWebhook(ctx, tm.AccountID, tm.Users[0], alerting.ChannelSlack, "https://hooks.slack.com/services/T0002/B0002/zyxwvutsrqponmlkjihgfedc"); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.Channels.WebhookURL(ctx, tm.AccountID, alerting.ChannelSlack); !strings.Contains(u, "T0002") {
		t.Fatalf("after reconnecting: %q", u)
	}
	for i := 0; i < 2; i++ {
		if err := s.Channels.DisconnectWebhook(ctx, tm.AccountID, alerting.ChannelSlack); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Channels.WebhookURL(ctx, tm.AccountID, alerting.ChannelSlack); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
		t.Fatalf("after disconnecting: %v", err)
	}
}

// Seed §7: a webhook URL on a foreign host is rejected, and nothing is
// stored. (The full table of hostile URLs is in the alerting package.)
func TestWebhookOnForeignHostIsRejected(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	ctx := context.Background()
	cases := []struct{ channel, url, code string }{
		{"slack", "https://hooks.slack.com.evil.com/services/T0001/B0001/abcdefghijkl", telemetry.EWEBHOOKHOST},
		{"slack", "http://169.254.169.254/latest/meta-data", telemetry.EWEBHOOKHOST},
		{"discord", slackURL, telemetry.EWEBHOOKHOST},
		{"email", slackURL, telemetry.EINVALID},
		{"teams", slackURL, telemetry.EWEBHOOKHOST},
		{"sms", slackURL, telemetry.ENOTFOUND},
		{"pagerduty", slackURL, telemetry.EINVALID},
	}
	for _, c := range cases {
		if _, err := s.Channels.ConnectWebhook(ctx, tm.AccountID, tm.Users[0], c.channel, c.url); telemetry.ErrorCode(err) != c.code {
			t.Errorf("%s %s: %v, want %s", c.channel, c.url, err, c.code)
		}
	}
	for ch, code := range map[string]string{"in_app": telemetry.EINVALID, "pager": telemetry.ENOTFOUND} {
		if err := s.Channels.DisconnectWebhook(ctx, tm.AccountID, ch); telemetry.ErrorCode(err) != code {
			t.Errorf("disconnect %s: %v", ch, err)
		}
	}
	var n int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_connections`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d webhooks stored", n)
	}
}
