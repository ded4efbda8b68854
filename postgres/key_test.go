package postgres

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

// keyFixture is an account with an MCP and one ingest key.
func keyFixture(t *testing.T, f *fixture) (*accounts.Session, *accounts.MCP, *accounts.CreatedKey) {
	t.Helper()
	ctx := context.Background()
	s := f.signup(t, "Keys")
	m, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "docs"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := f.keys.CreateKey(ctx, s.Account.ID, m.ID, accounts.NewKey{Name: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	return s, m, k
}

func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s, m, k := keyFixture(t, f)
	if !strings.HasPrefix(k.Key, "ik_") || len(k.Key) < 3+27 || !ids.ValidSecret(k.Key, "ik_") {
		t.Fatalf("key %q", k.Key)
	}
	if k.Hint != "ik_••••••••"+k.Key[len(k.Key)-4:] || k.Name != "prod" || k.CreatedAt.IsZero() || k.LastUsedAt != nil {
		t.Fatalf("created %+v", k)
	}
	list, err := f.keys.ListKeys(ctx, s.Account.ID, m.ID)
	if err != nil || len(list) != 1 || list[0].ID != k.ID || list[0].Hint != k.Hint {
		t.Fatalf("list %+v %v", list, err)
	}
	p, err := f.auth.AuthenticateIngestKey(ctx, k.Key)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != accounts.CredentialIngestKey || p.KeyID != k.ID || p.MCPID != m.ID || p.AccountID != s.Account.ID {
		t.Fatalf("principal %+v", p)
	}

	// Another account sees none of it.
	other := f.signup(t, "Other")
	_, err = f.keys.ListKeys(ctx, other.Account.ID, m.ID)
	wantCode(t, err, telemetry.ENOTFOUND)
	_, err = f.keys.CreateKey(ctx, other.Account.ID, m.ID, accounts.NewKey{Name: "steal"})
	wantCode(t, err, telemetry.ENOTFOUND)
	wantCode(t, f.keys.DeleteKey(ctx, other.Account.ID, k.ID), telemetry.ENOTFOUND)
	_, err = f.mcps.FindMCP(ctx, other.Account.ID, m.ID)
	wantCode(t, err, telemetry.ENOTFOUND)
	_, err = f.mcps.UpdateMCP(ctx, other.Account.ID, m.ID, accounts.MCPUpdate{})
	wantCode(t, err, telemetry.ENOTFOUND)
	wantCode(t, f.mcps.DeleteMCP(ctx, other.Account.ID, m.ID), telemetry.ENOTFOUND)
	if ms, err := f.mcps.ListMCPs(ctx, other.Account.ID); err != nil || len(ms) != 0 {
		t.Fatalf("other's MCPs %+v %v", ms, err)
	}
	for _, id := range []string{"", "mcp_", "mcp_\x00", "key_" + strings.Repeat("A", 16), m.ID + "x"} {
		_, err = f.mcps.FindMCP(ctx, s.Account.ID, id)
		wantCode(t, err, telemetry.ENOTFOUND)
	}

	// Garbage keys are refused without a lookup.
	before := f.keys.lookups.Load()
	for _, bad := range []string{"", "ik_", "ik_short", "sess_" + k.Key[3:], k.Key + "x", k.Key[:len(k.Key)-1] + "\x00"} {
		_, err := f.auth.AuthenticateIngestKey(ctx, bad)
		wantCode(t, err, telemetry.EUNAUTHENTICATED)
	}
	if n := f.keys.lookups.Load() - before; n != 0 {
		t.Errorf("%d lookups for malformed keys", n)
	}

	if err := f.keys.DeleteKey(ctx, s.Account.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	// This instance forgets the key at once.
	_, err = f.auth.AuthenticateIngestKey(ctx, k.Key)
	wantCode(t, err, telemetry.EUNAUTHENTICATED)
	wantCode(t, f.keys.DeleteKey(ctx, s.Account.ID, k.ID), telemetry.ENOTFOUND)
}

func TestMCPs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s := f.signup(t, "MCPs")
	a, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "  spaced  ", Description: "ünïcødé ✓"})
	if err != nil || a.Name != "  spaced  " || a.Description != "ünïcødé ✓" || !strings.HasPrefix(a.ID, "mcp_") {
		t.Fatalf("%+v %v", a, err)
	}
	b, _ := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "second"})
	_, err = f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: ""})
	wantCode(t, err, telemetry.EINVALID, "body.name")
	ms, err := f.mcps.ListMCPs(ctx, s.Account.ID)
	if err != nil || len(ms) != 2 || ms[0].ID != a.ID || ms[1].ID != b.ID {
		t.Fatalf("list %+v", ms)
	}
	name := "renamed"
	u, err := f.mcps.UpdateMCP(ctx, s.Account.ID, a.ID, accounts.MCPUpdate{Name: &name})
	if err != nil || u.Name != "renamed" || u.Description != "ünïcødé ✓" {
		t.Fatalf("update %+v %v", u, err)
	}
	empty := ""
	u, _ = f.mcps.UpdateMCP(ctx, s.Account.ID, a.ID, accounts.MCPUpdate{Description: &empty})
	if u.Description != "" || u.Name != "renamed" {
		t.Fatalf("clear description %+v", u)
	}
	if err := f.mcps.DeleteMCP(ctx, s.Account.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.mcps.FindMCP(ctx, s.Account.ID, a.ID)
	wantCode(t, err, telemetry.ENOTFOUND)
}

func TestCompany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s := f.signup(t, "Company")
	c, err := f.accounts.Company(ctx, s.Account.ID)
	if err != nil || *c != (accounts.Company{}) {
		t.Fatalf("empty company %+v %v", c, err)
	}
	str := func(v string) *string { return &v }
	c, err = f.accounts.UpdateCompany(ctx, s.Account.ID, accounts.ReplaceCompany(accounts.Company{LegalName: str("Acme"), VATID: str("DE123")}))
	if err != nil || *c.LegalName != "Acme" || *c.VATID != "DE123" || c.Website != nil {
		t.Fatalf("replace %+v %v", c, err)
	}
	c, err = f.accounts.UpdateCompany(ctx, s.Account.ID, accounts.CompanyUpdate{Website: accounts.To(str("https://acme.test")), VATID: accounts.To[string](nil)})
	if err != nil || *c.LegalName != "Acme" || *c.Website != "https://acme.test" || c.VATID != nil {
		t.Fatalf("merge %+v %v", c, err)
	}
	_, err = f.accounts.UpdateCompany(ctx, s.Account.ID, accounts.CompanyUpdate{BillingEmail: accounts.To(str("nope"))})
	wantCode(t, err, telemetry.EINVALID, "body.billing_email")
	other := f.signup(t, "Other")
	if c, _ := f.accounts.Company(ctx, other.Account.ID); c.LegalName != nil {
		t.Fatalf("other account sees %+v", c)
	}
	// A PATCH creating the record leaves unnamed fields null.
	c, _ = f.accounts.UpdateCompany(ctx, other.Account.ID, accounts.CompanyUpdate{Address: accounts.To(str("1 Road"))})
	if c.LegalName != nil || *c.Address != "1 Road" {
		t.Fatalf("first patch %+v", c)
	}
}

func TestAccountAndProfile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s := f.signup(t, "Prof")
	p := f.principal(t, s.Token)
	a, err := f.accounts.Account(ctx, p)
	if err != nil || a.ID != s.Account.ID || a.Role != accounts.RoleOwner || a.Plan != "free" {
		t.Fatalf("%+v %v", a, err)
	}
	name := "Renamed Inc."
	a, err = f.accounts.UpdateAccount(ctx, p, accounts.AccountUpdate{Name: &name})
	if err != nil || a.Name != name {
		t.Fatalf("%+v %v", a, err)
	}
	newEmail := strings.ToUpper(email("moved"))
	pr, err := f.accounts.UpdateProfile(ctx, p, accounts.ProfileUpdate{Email: &newEmail})
	if err != nil || pr.Email != newEmail || pr.Name != "Prof" || pr.UserID != p.UserID {
		t.Fatalf("%+v %v", pr, err)
	}
	if _, err := f.auth.Login(ctx, accounts.Login{Email: strings.ToLower(newEmail), Password: testPassword}); err != nil {
		t.Fatalf("login with the new email: %v", err)
	}
	taken := strings.ToLower(f.signup(t, "Taken").User.Email)
	_, err = f.accounts.UpdateProfile(ctx, p, accounts.ProfileUpdate{Email: &taken})
	wantCode(t, err, telemetry.ECONFLICT, "body.email")
}

// TestSecretsNeverStored dumps every row of every table and looks for any
// secret, raw or in the encodings a careless store might use.
func TestSecretsNeverStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s, _, k := keyFixture(t, f)
	added, err := f.members.AddMember(ctx, f.principal(t, s.Token), accounts.NewMember{Email: email("inv"), Role: accounts.RoleMember})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{s.Token, k.Key, added.InviteToken, testPassword}
	var dump []string
	for _, table := range []string{"users", "accounts", "memberships", "sessions", "invitations", "companies", "mcps", "ingest_keys"} {
		rows, err := f.db.Pool.Query(ctx, `SELECT row_to_json(t)::text FROM `+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				t.Fatal(err)
			}
			dump = append(dump, row)
		}
		rows.Close()
	}
	if len(dump) < 8 {
		t.Fatalf("dump too small to mean anything: %v", dump)
	}
	for _, sec := range secrets {
		for _, enc := range []string{sec, sec[len(sec)-12:], hex.EncodeToString([]byte(sec)), base64.StdEncoding.EncodeToString([]byte(sec))[:16]} {
			for _, row := range dump {
				if strings.Contains(row, enc) {
					t.Errorf("secret %q found in %s", enc, row)
				}
			}
		}
	}
}

func TestKeyCacheHotPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	_, _, k := keyFixture(t, f)
	clock := time.Now() // frozen: this test is about counting, not expiry
	f.keys.now = func() time.Time { return clock }
	before := f.keys.lookups.Load()
	for i := 0; i < 50; i++ {
		if _, err := f.auth.AuthenticateIngestKey(ctx, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.keys.lookups.Load() - before; n != 1 {
		t.Fatalf("%d database lookups for 50 authentications, want 1", n)
	}
	// Negative answers are cached too.
	unknown := ids.NewSecret("ik_")
	before = f.keys.lookups.Load()
	for i := 0; i < 10; i++ {
		_, err := f.auth.AuthenticateIngestKey(ctx, unknown)
		wantCode(t, err, telemetry.EUNAUTHENTICATED)
	}
	if n := f.keys.lookups.Load() - before; n != 1 {
		t.Fatalf("%d lookups for an unknown key, want 1", n)
	}
}

// TestKeyCacheTTL: an instance that never hears of a deletion (no LISTEN)
// stops accepting the key once its cache entry expires.
func TestKeyCacheTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{KeyCacheTTL: 2 * time.Second})
	s, _, k := keyFixture(t, f)
	other := NewKeyService(f.db, 2*time.Second) // a second instance, not listening
	clock := time.Now()
	other.now = func() time.Time { return clock }
	if _, err := other.AuthenticateIngestKey(ctx, k.Key); err != nil {
		t.Fatal(err)
	}
	if err := f.keys.DeleteKey(ctx, s.Account.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(1900 * time.Millisecond)
	if _, err := other.AuthenticateIngestKey(ctx, k.Key); err != nil {
		t.Fatalf("within the TTL the cached answer stands (no round trip): %v", err)
	}
	clock = clock.Add(100 * time.Millisecond)
	_, err := other.AuthenticateIngestKey(ctx, k.Key)
	wantCode(t, err, telemetry.EUNAUTHENTICATED)
}

// TestKeyCacheRealTime is the contract's bound on a real clock, with no
// LISTEN: a deleted key is refused within 5 seconds.
func TestKeyCacheRealTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s, _, k := keyFixture(t, f)
	other := NewKeyService(f.db, 2*time.Second)
	if _, err := other.AuthenticateIngestKey(ctx, k.Key); err != nil {
		t.Fatal(err)
	}
	if err := f.keys.DeleteKey(ctx, s.Account.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, other, k.Key, 5*time.Second)
}

// TestKeyRevocationListen: with a cache TTL of an hour, only the
// notification can make another instance refuse a deleted key, whether it
// is deleted directly or through its MCP.
func TestKeyRevocationListen(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f := newFixture(t, accounts.AuthPolicy{})
	s, m, k := keyFixture(t, f)
	k2, err := f.keys.CreateKey(ctx, s.Account.ID, m.ID, accounts.NewKey{Name: "second"})
	if err != nil {
		t.Fatal(err)
	}
	other := NewKeyService(f.db, time.Hour)
	done := make(chan error, 1)
	go func() { done <- other.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, "the listener", 10*time.Second, other.listening.Load)
	for _, key := range []string{k.Key, k2.Key} {
		if _, err := other.AuthenticateIngestKey(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.keys.DeleteKey(ctx, s.Account.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, other, k.Key, 5*time.Second)
	if _, err := other.AuthenticateIngestKey(ctx, k2.Key); err != nil {
		t.Fatalf("the other key must live on: %v", err)
	}
	// The cascade from a plain SQL delete of the MCP announces too.
	if _, err := f.db.Pool.Exec(ctx, `DELETE FROM mcps WHERE id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, other, k2.Key, 5*time.Second)
}

func TestKeyLastUsed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, accounts.AuthPolicy{})
	s, m, k := keyFixture(t, f)
	go func() { _ = f.keys.Run(ctx) }()
	if _, err := f.auth.AuthenticateIngestKey(ctx, k.Key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "last_used_at", 10*time.Second, func() bool {
		keys, err := f.keys.ListKeys(ctx, s.Account.ID, m.ID)
		return err == nil && keys[0].LastUsedAt != nil
	})
	// At most one write a minute: the next uses queue nothing.
	for i := 0; i < 10; i++ {
		_, _ = f.auth.AuthenticateIngestKey(ctx, k.Key)
	}
	if n := len(f.keys.touches); n != 0 {
		t.Fatalf("%d writes queued within the minute", n)
	}
}

func waitRefused(t *testing.T, ks *KeyService, key string, within time.Duration) {
	t.Helper()
	waitFor(t, "the deleted key to be refused", within, func() bool {
		_, err := ks.AuthenticateIngestKey(context.Background(), key)
		return telemetry.ErrorCode(err) == telemetry.EUNAUTHENTICATED
	})
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
