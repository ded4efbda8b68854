package accounts

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// Member is a person's membership in one account.
type Member struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	// EmailVerified: the person proved the address (docs/delivery.md).
	EmailVerified bool      `json:"email_verified"`
	Name          string    `json:"name"`
	Role          Role      `json:"role"`
	JoinedAt      time.Time `json:"joined_at"`
}

// MemberList is the team: members and the invitations still pending.
type MemberList struct {
	Items       []Member     `json:"items"`
	Invitations []Invitation `json:"invitations"`
}

// NewMember adds a person to the account by email.
type NewMember struct {
	Email string `json:"email"`
	Role  Role   `json:"role"`
}

// Validate checks the email and role.
func (m NewMember) Validate() error {
	if err := checkEmail("body.email", m.Email); err != nil {
		return err
	}
	return checkRole("body.role", m.Role)
}

// MemberUpdate changes a member's role.
type MemberUpdate struct {
	Role Role `json:"role"`
}

// Validate checks the role.
func (u MemberUpdate) Validate() error { return checkRole("body.role", u.Role) }

// AddedMember is what adding by email did: a person who already has an
// account on the service becomes a Member at once; anyone else gets an
// Invitation, whose secret InviteToken is returned this once only.
type AddedMember struct {
	Member      *Member
	Invitation  *Invitation
	InviteToken string
}

// CheckRoleChange decides whether a caller may move a person from role
// `from` to role `to` (`to` empty: removal; `from` empty: adding). Owners
// and admins manage people, but only an owner may grant the owner role or
// change or remove an owner: an admin cannot promote themselves past the
// people who made them admin. Keeping at least one owner needs the count of
// owners and is the store's check (ECONFLICT).
// Errors: EFORBIDDEN.
func CheckRoleChange(caller, from, to Role) error {
	if !caller.CanManage() {
		return telemetry.Errorf(telemetry.EFORBIDDEN, "Only owners and admins manage members.")
	}
	if (from == RoleOwner || to == RoleOwner) && caller != RoleOwner {
		return telemetry.Errorf(telemetry.EFORBIDDEN, "Only owners may grant the owner role or change or remove an owner.")
	}
	return nil
}

// MemberService manages who belongs to an account. Every method acts on
// the caller's account (p.AccountID); another account's people are
// ENOTFOUND.
type MemberService interface {
	// ListMembers returns the members, oldest first, and the pending
	// invitations.
	ListMembers(ctx context.Context, accountID string) (*MemberList, error)
	// AddMember adds an existing person directly or invites anyone else;
	// inviting an email again replaces the pending invitation (and its
	// token).
	// Errors: EINVALID with the field; EFORBIDDEN (CheckRoleChange);
	// ECONFLICT when the person is a member already.
	AddMember(ctx context.Context, p *Principal, in NewMember) (*AddedMember, error)
	// UpdateMember changes a member's role and returns the member.
	// Errors: EINVALID; ENOTFOUND; EFORBIDDEN (CheckRoleChange);
	// ECONFLICT when it would leave the account without an owner.
	UpdateMember(ctx context.Context, p *Principal, userID string, upd MemberUpdate) (*Member, error)
	// RemoveMember removes a member and, in the same transaction, revokes
	// their sessions for the account, deletes their personal access
	// tokens there and fails their queued deliveries (not_a_member).
	// Inbox items already delivered to them are not touched.
	// Errors: ENOTFOUND; EFORBIDDEN (CheckRoleChange); ECONFLICT when it
	// would leave the account without an owner.
	RemoveMember(ctx context.Context, p *Principal, userID string) error
}
