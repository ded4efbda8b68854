package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry"
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
	// RetentionDays is the account's own retention; nil: the
	// installation's.
	RetentionDays *int `json:"retention_days"`
}

// AccountUpdate changes the account; nil fields stay as they are.
type AccountUpdate struct {
	Name *string `json:"name"`
	// RetentionDays sets the account's retention; 0 returns to the
	// installation's. Check it with ValidateRetention first.
	RetentionDays *int `json:"retention_days"`
}

// MaxRetentionDays bounds an account's retention when the installation
// keeps telemetry forever (100 years).
const MaxRetentionDays = 36500

// EffectiveRetention is the retention that applies to an account whose own
// setting is own (nil: none) on an installation keeping installation days
// (0: forever): the account's, never more than the installation's. 0
// means forever.
func EffectiveRetention(own *int, installation int) int {
	if own == nil || *own <= 0 {
		return installation
	}
	if installation > 0 && *own > installation {
		return installation
	}
	return *own
}

// ValidateRetention checks a requested account retention against the
// installation's: 0 (back to the installation's) or 1 to installation days
// (MaxRetentionDays when the installation keeps forever).
// Errors: EINVALID at body.retention_days.
func ValidateRetention(days, installation int) error {
	max := installation
	if max <= 0 {
		max = MaxRetentionDays
	}
	if days < 0 || days > max {
		return telemetry.FieldError(telemetry.EINVALID, "body.retention_days",
			"retention_days is 0 (the installation's) or 1 to %d (this installation keeps %s).", max, describeDays(installation))
	}
	return nil
}

func describeDays(d int) string {
	if d <= 0 {
		return "telemetry forever"
	}
	return fmt.Sprintf("%d days", d)
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
