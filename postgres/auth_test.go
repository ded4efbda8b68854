package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
)

func TestSignupLoginLogout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	addr := email("Ada")
	s, err := f.auth.Signup(ctx, accounts.Signup{Email: addr, Password: testPassword, Name: " Ada ", AccountName: "Analytical Engines"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Token, "sess_") || len(s.Token) < 5+22 {
		t.Errorf("token %q", s.Token)
	}
	if s.User.Email != addr || s.User.Name != " Ada " || s.Account.Name != "Analytical Engines" || s.Account.Role != accounts.RoleOwner || s.Account.Plan != "free" {
		t.Errorf("session %+v", s)
	}
	if d := time.Until(s.ExpiresAt); d < 29*24*time.Hour || d > 30*24*time.Hour {
		t.Errorf("expires in %v, want 30 days", d)
	}
	p := f.principal(t, s.Token)
	if p.UserID != s.User.ID || p.AccountID != s.Account.ID || p.Role != accounts.RoleOwner || p.Kind != accounts.CredentialSession {
		t.Errorf("principal %+v", p)
	}

	// Login is case-insensitive on the email and binds to the same account.
	l, err := f.auth.Login(ctx, accounts.Login{Email: strings.ToUpper(addr), Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	if l.Account.ID != s.Account.ID || l.User.ID != s.User.ID || l.Token == s.Token {
		t.Errorf("login %+v", l)
	}

	// Wrong password and unknown email: one answer.
	_, errPw := f.auth.Login(ctx, accounts.Login{Email: addr, Password: "wrong password"})
	_, errEmail := f.auth.Login(ctx, accounts.Login{Email: email("nobody"), Password: testPassword})
	wantCode(t, errPw, telemetry.EINVALIDCREDENTIALS)
	wantCode(t, errEmail, telemetry.EINVALIDCREDENTIALS)
	if errPw.Error() != errEmail.Error() {
		t.Errorf("answers differ: %v / %v", errPw, errEmail)
	}

	// Logout revokes that session only.
	if err := f.auth.Logout(ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err = f.auth.AuthenticateSession(ctx, s.Token)
	wantCode(t, err, telemetry.EUNAUTHENTICATED)
	f.principal(t, l.Token)

	for _, garbage := range []string{"", "sess_", "sess_short", "sess_" + strings.Repeat("x", 32), "sess_" + strings.Repeat("\x00", 32), "ik_" + strings.Repeat("a", 32)} {
		_, err := f.auth.AuthenticateSession(ctx, garbage)
		wantCode(t, err, telemetry.EUNAUTHENTICATED)
	}
}

func TestSignupValidationAndConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	s := f.signup(t, "Grace")
	_, err := f.auth.Signup(ctx, accounts.Signup{Email: strings.ToUpper(s.User.Email), Password: testPassword, Name: "Other"})
	wantCode(t, err, telemetry.ECONFLICT, "body.email")
	_, err = f.auth.Signup(ctx, accounts.Signup{Email: email("x"), Password: "short", Name: "X"})
	wantCode(t, err, telemetry.EINVALID, "body.password")
	// The default account name is the person's name.
	s2, err := f.auth.Signup(ctx, accounts.Signup{Email: email("y"), Password: testPassword, Name: "Yan 🦄"})
	if err != nil || s2.Account.Name != "Yan 🦄" {
		t.Fatalf("%v %+v", err, s2)
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{SessionTTL: time.Hour})
	clock := time.Now()
	f.auth.now = func() time.Time { return clock }
	s := f.signup(t, "Exp")
	if !s.ExpiresAt.Equal(clock.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Fatalf("expires %v", s.ExpiresAt)
	}
	clock = clock.Add(59 * time.Minute)
	f.principal(t, s.Token)
	clock = clock.Add(time.Minute)
	_, err := f.auth.AuthenticateSession(ctx, s.Token)
	wantCode(t, err, telemetry.EUNAUTHENTICATED)
}

func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{LoginMaxFailures: 3, LoginFailureWindow: 15 * time.Minute})
	clock := time.Now()
	f.auth.now = func() time.Time { return clock }
	s := f.signup(t, "Limited")
	wrong := accounts.Login{Email: s.User.Email, Password: "not the password"}
	right := accounts.Login{Email: strings.ToUpper(s.User.Email), Password: testPassword}

	for i := 0; i < 3; i++ {
		_, err := f.auth.Login(ctx, wrong)
		wantCode(t, err, telemetry.EINVALIDCREDENTIALS)
		clock = clock.Add(time.Minute)
	}
	// Limited now, even with the right password, for exactly the time until
	// the first failure leaves the window.
	_, err := f.auth.Login(ctx, right)
	wantCode(t, err, telemetry.ERATELIMITED)
	if ra := err.(*telemetry.Error).RetryAfter; ra != 12*60 {
		t.Fatalf("Retry-After %d, want %d", ra, 12*60)
	}
	clock = clock.Add(11*time.Minute + 59*time.Second + 500*time.Millisecond)
	_, err = f.auth.Login(ctx, right)
	if telemetry.ErrorCode(err) != telemetry.ERATELIMITED || err.(*telemetry.Error).RetryAfter != 1 {
		t.Fatalf("half a second before the end: %v", err)
	}
	clock = clock.Add(time.Second)
	if _, err := f.auth.Login(ctx, right); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	// Success cleared the failures: three more are allowed.
	for i := 0; i < 3; i++ {
		_, err := f.auth.Login(ctx, wrong)
		wantCode(t, err, telemetry.EINVALIDCREDENTIALS)
	}
	_, err = f.auth.Login(ctx, wrong)
	wantCode(t, err, telemetry.ERATELIMITED)

	// Unknown emails are limited the same way; other emails are not.
	ghost := accounts.Login{Email: email("ghost"), Password: "whatever"}
	for i := 0; i < 3; i++ {
		_, err := f.auth.Login(ctx, ghost)
		wantCode(t, err, telemetry.EINVALIDCREDENTIALS)
	}
	_, err = f.auth.Login(ctx, ghost)
	wantCode(t, err, telemetry.ERATELIMITED)
	other := f.signup(t, "Other")
	if _, err := f.auth.Login(ctx, accounts.Login{Email: other.User.Email, Password: testPassword}); err != nil {
		t.Fatal(err)
	}
}

func TestLoginPicksAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	a := f.signup(t, "Multi")
	b := f.signup(t, "Boss")
	pb := f.principal(t, b.Token)
	added, err := f.members.AddMember(ctx, pb, accounts.NewMember{Email: a.User.Email, Role: accounts.RoleMember})
	if err != nil || added.Member == nil {
		t.Fatalf("%v %+v", err, added)
	}
	// Default: the account joined first.
	l, err := f.auth.Login(ctx, accounts.Login{Email: a.User.Email, Password: testPassword})
	if err != nil || l.Account.ID != a.Account.ID {
		t.Fatalf("%v %+v", err, l)
	}
	l, err = f.auth.Login(ctx, accounts.Login{Email: a.User.Email, Password: testPassword, AccountID: b.Account.ID})
	if err != nil || l.Account.ID != b.Account.ID || l.Account.Role != accounts.RoleMember {
		t.Fatalf("%v %+v", err, l)
	}
	if p := f.principal(t, l.Token); p.AccountID != b.Account.ID || p.Role != accounts.RoleMember {
		t.Fatalf("principal %+v", p)
	}
	stranger := f.signup(t, "Stranger")
	_, err = f.auth.Login(ctx, accounts.Login{Email: a.User.Email, Password: testPassword, AccountID: stranger.Account.ID})
	wantCode(t, err, telemetry.EINVALID, "body.account_id")
	_, err = f.auth.Login(ctx, accounts.Login{Email: a.User.Email, Password: testPassword, AccountID: "acc_\x00"})
	wantCode(t, err, telemetry.EINVALID, "body.account_id")
}

// The two failing logins must cost the same: compare these two figures.
func BenchmarkLoginWrongPassword(b *testing.B) { benchmarkLogin(b, true) }
func BenchmarkLoginUnknownEmail(b *testing.B)  { benchmarkLogin(b, false) }

func benchmarkLogin(b *testing.B, known bool) {
	ctx := context.Background()
	f := newFixture(b, accounts.AuthPolicy{LoginMaxFailures: 1 << 30})
	in := accounts.Login{Email: email("nobody"), Password: "wrong password"}
	if known {
		in.Email = f.signup(b, "Bench").User.Email
	}
	for b.Loop() {
		if _, err := f.auth.Login(ctx, in); telemetry.ErrorCode(err) != telemetry.EINVALIDCREDENTIALS {
			b.Fatal(err)
		}
	}
}
