package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

func TestInvitations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	owner := f.signup(t, "Owner")
	p := f.principal(t, owner.Token)
	addr := email("Colleague")

	added, err := f.members.AddMember(ctx, p, accounts.NewMember{Email: addr, Role: accounts.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if added.Member != nil || added.Invitation == nil || !strings.HasPrefix(added.InviteToken, "inv_") || added.Invitation.Email != addr || added.Invitation.Role != accounts.RoleAdmin {
		t.Fatalf("added %+v", added)
	}
	list, err := f.members.ListMembers(ctx, p.AccountID)
	if err != nil || len(list.Items) != 1 || len(list.Invitations) != 1 || list.Invitations[0].ID != added.Invitation.ID {
		t.Fatalf("list %+v %v", list, err)
	}

	// Inviting again replaces the invitation: the first token is dead.
	again, err := f.members.AddMember(ctx, p, accounts.NewMember{Email: strings.ToUpper(addr), Role: accounts.RoleMember})
	if err != nil {
		t.Fatal(err)
	}
	signup := accounts.Signup{Email: addr, Password: testPassword, Name: "Colleague", InviteToken: added.InviteToken}
	_, err = f.auth.Signup(ctx, signup)
	wantCode(t, err, telemetry.EINVALID, "body.invite_token")

	// The token is bound to the invited email.
	signup.InviteToken = again.InviteToken
	signup.Email = email("someone-else")
	_, err = f.auth.Signup(ctx, signup)
	wantCode(t, err, telemetry.EINVALID, "body.email")

	signup.Email = strings.ToUpper(addr) // any case of the invited address
	signup.AccountName = "ignored"
	s, err := f.auth.Signup(ctx, signup)
	if err != nil {
		t.Fatal(err)
	}
	if s.Account.ID != owner.Account.ID || s.Account.Role != accounts.RoleMember || s.Account.Name != owner.Account.Name {
		t.Fatalf("joined %+v", s.Account)
	}
	if cp := f.principal(t, s.Token); cp.AccountID != owner.Account.ID || cp.Role != accounts.RoleMember {
		t.Fatalf("principal %+v", cp)
	}
	list, _ = f.members.ListMembers(ctx, p.AccountID)
	if len(list.Items) != 2 || len(list.Invitations) != 0 || list.Items[1].Email != strings.ToUpper(addr) {
		t.Fatalf("after joining %+v", list)
	}

	// A used token, a garbage token: the same 422.
	signup.Email, signup.InviteToken = email("late"), again.InviteToken
	_, err = f.auth.Signup(ctx, signup)
	wantCode(t, err, telemetry.EINVALID, "body.invite_token")
	for _, tok := range []string{"inv_nope", "inv_" + strings.Repeat("A", 32), "sess_" + strings.Repeat("A", 32)} {
		signup.InviteToken = tok
		_, err = f.auth.Signup(ctx, signup)
		wantCode(t, err, telemetry.EINVALID, "body.invite_token")
	}

	// An existing person is added directly; adding twice is a conflict.
	other := f.signup(t, "Other")
	added, err = f.members.AddMember(ctx, p, accounts.NewMember{Email: strings.ToUpper(other.User.Email), Role: accounts.RoleMember})
	if err != nil || added.Member == nil || added.Invitation != nil || added.InviteToken != "" {
		t.Fatalf("direct add %+v %v", added, err)
	}
	if added.Member.UserID != other.User.ID || added.Member.Email != other.User.Email || added.Member.Role != accounts.RoleMember || added.Member.JoinedAt.IsZero() {
		t.Fatalf("member %+v", added.Member)
	}
	_, err = f.members.AddMember(ctx, p, accounts.NewMember{Email: other.User.Email, Role: accounts.RoleAdmin})
	wantCode(t, err, telemetry.ECONFLICT)

	// Someone invited who signed up on their own is added directly, and
	// their pending invitation goes.
	late := email("late")
	if _, err := f.members.AddMember(ctx, p, accounts.NewMember{Email: late, Role: accounts.RoleMember}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.Signup(ctx, accounts.Signup{Email: late, Password: testPassword, Name: "Late"}); err != nil {
		t.Fatal(err)
	}
	if added, err := f.members.AddMember(ctx, p, accounts.NewMember{Email: late, Role: accounts.RoleMember}); err != nil || added.Member == nil {
		t.Fatalf("%+v %v", added, err)
	}
	if list, _ := f.members.ListMembers(ctx, p.AccountID); len(list.Invitations) != 0 || len(list.Items) != 4 {
		t.Fatalf("after direct add %+v", list)
	}

	// Members cannot add; admins cannot grant owner.
	_, err = f.members.AddMember(ctx, f.principal(t, s.Token), accounts.NewMember{Email: email("x"), Role: accounts.RoleMember})
	wantCode(t, err, telemetry.EFORBIDDEN)
	_, err = f.members.AddMember(ctx, &accounts.Principal{AccountID: p.AccountID, UserID: p.UserID, Role: accounts.RoleAdmin},
		accounts.NewMember{Email: email("x"), Role: accounts.RoleOwner})
	wantCode(t, err, telemetry.EFORBIDDEN)
}

func TestOwnersAndRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, accounts.AuthPolicy{})
	first := f.signup(t, "First")
	p1 := f.principal(t, first.Token)

	// The sole owner can neither step down nor leave.
	_, err := f.members.UpdateMember(ctx, p1, p1.UserID, accounts.MemberUpdate{Role: accounts.RoleAdmin})
	wantCode(t, err, telemetry.ECONFLICT)
	if !strings.Contains(err.Error(), "at least one owner") {
		t.Errorf("detail %q", err)
	}
	wantCode(t, f.members.RemoveMember(ctx, p1, p1.UserID), telemetry.ECONFLICT)

	second := f.signup(t, "Second")
	admin := f.signup(t, "Admin")
	for _, nm := range []struct {
		s    *accounts.Session
		role accounts.Role
	}{{second, accounts.RoleOwner}, {admin, accounts.RoleAdmin}} {
		if _, err := f.members.AddMember(ctx, p1, accounts.NewMember{Email: nm.s.User.Email, Role: nm.role}); err != nil {
			t.Fatal(err)
		}
	}
	adminSession, err := f.auth.Login(ctx, accounts.Login{Email: admin.User.Email, Password: testPassword, AccountID: first.Account.ID})
	if err != nil {
		t.Fatal(err)
	}
	pa := f.principal(t, adminSession.Token)

	// Admins cannot touch owners.
	_, err = f.members.UpdateMember(ctx, pa, p1.UserID, accounts.MemberUpdate{Role: accounts.RoleMember})
	wantCode(t, err, telemetry.EFORBIDDEN)
	wantCode(t, f.members.RemoveMember(ctx, pa, p1.UserID), telemetry.EFORBIDDEN)
	_, err = f.members.UpdateMember(ctx, pa, pa.UserID, accounts.MemberUpdate{Role: accounts.RoleOwner})
	wantCode(t, err, telemetry.EFORBIDDEN)

	// With two owners, one may step down.
	m, err := f.members.UpdateMember(ctx, p1, p1.UserID, accounts.MemberUpdate{Role: accounts.RoleAdmin})
	if err != nil || m.Role != accounts.RoleAdmin || m.UserID != p1.UserID {
		t.Fatalf("%+v %v", m, err)
	}
	// Unknown, malformed and other accounts' people are not found.
	for _, id := range []string{"usr_" + strings.Repeat("A", 16), "nope", "usr_\x00", first.User.ID[:10]} {
		_, err = f.members.UpdateMember(ctx, p1, id, accounts.MemberUpdate{Role: accounts.RoleMember})
		wantCode(t, err, telemetry.ENOTFOUND)
	}
	stranger := f.signup(t, "Stranger")
	wantCode(t, f.members.RemoveMember(ctx, p1, stranger.User.ID), telemetry.ENOTFOUND)

	// Removing the admin revokes their sessions for this account only.
	// Second's signup session is bound to second's own account, where the
	// admin is nobody: not found. A session for the first account works.
	wantCode(t, f.members.RemoveMember(ctx, f.principal(t, second.Token), pa.UserID), telemetry.ENOTFOUND)
	s2, _ := f.auth.Login(ctx, accounts.Login{Email: second.User.Email, Password: testPassword, AccountID: first.Account.ID})
	if err := f.members.RemoveMember(ctx, f.principal(t, s2.Token), pa.UserID); err != nil {
		t.Fatal(err)
	}
	_, err = f.auth.AuthenticateSession(ctx, adminSession.Token)
	wantCode(t, err, telemetry.EUNAUTHENTICATED)
	f.principal(t, admin.Token) // their own account's session lives on
	var revoked bool
	if err := f.db.Pool.QueryRow(ctx, `SELECT revoked_at IS NOT NULL FROM sessions WHERE token_hash = $1`, ids.HashSecret(adminSession.Token)).Scan(&revoked); err != nil || !revoked {
		t.Fatalf("session not revoked: %v", err)
	}
	list, _ := f.members.ListMembers(ctx, first.Account.ID)
	if len(list.Items) != 2 {
		t.Fatalf("members %+v", list.Items)
	}
}
