package accounts

// Role is a person's role in one account.
type Role string

// Roles, from most to least powerful. Owners and admins manage MCPs, keys,
// rules, members, the company record and webhook connections; members read
// metrics and account resources and manage their own profile, preferences
// and inbox.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleOwner || r == RoleAdmin || r == RoleMember }

// CanManage reports whether r may create, change and delete account-wide
// resources (MCPs, keys, rules, members, company, webhooks).
func (r Role) CanManage() bool { return r == RoleOwner || r == RoleAdmin }
