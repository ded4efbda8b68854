package accounts

import (
	"context"
	"time"
)

// Plans. Every account starts on the free plan; plans are changed by
// billing, never through the API.
const PlanFree = "free"

// Account is a team: it owns MCPs, keys, rules and a company record, and
// people belong to it with a role.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
	// Role is the caller's role in the account.
	Role Role `json:"role"`
}

// AccountUpdate renames the account; nil fields stay as they are.
type AccountUpdate struct {
	Name *string `json:"name"`
}

// Validate checks the fields present.
func (u AccountUpdate) Validate() error {
	if u.Name != nil {
		return checkText("body.name", *u.Name, 1, MaxNameLen)
	}
	return nil
}

// AccountService reads and changes the caller's account, their own profile
// and the account's company record. Who may call what is decided by the
// caller's role before these run (httpapi access rules); the methods act on
// p.AccountID and p.UserID only, so no other account is reachable.
type AccountService interface {
	// Account returns the caller's account with their role.
	// Errors: ENOTFOUND if the account is gone.
	Account(ctx context.Context, p *Principal) (*Account, error)
	// UpdateAccount changes the account and returns it whole.
	// Errors: EINVALID with the field.
	UpdateAccount(ctx context.Context, p *Principal, upd AccountUpdate) (*Account, error)
	// Profile returns the caller's own profile.
	Profile(ctx context.Context, p *Principal) (*Profile, error)
	// UpdateProfile changes the caller's own profile.
	// Errors: EINVALID with the field; ECONFLICT (body.email) when another
	// person has the email.
	UpdateProfile(ctx context.Context, p *Principal, upd ProfileUpdate) (*Profile, error)
	// Company returns the account's company record; every field is null
	// until one is set.
	Company(ctx context.Context, accountID string) (*Company, error)
	// UpdateCompany merges upd into the company record (a replacement sets
	// every field) and returns it whole.
	// Errors: EINVALID with the field.
	UpdateCompany(ctx context.Context, accountID string, upd CompanyUpdate) (*Company, error)
}
