package accounts

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// Signup creates a person and either a new account they own or, with an
// invitation token, a membership in the inviting account.
type Signup struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name"`
	// AccountName names the new account; empty means the person's name.
	// It is ignored when InviteToken is set: the account exists already.
	AccountName string `json:"account_name"`
	// InviteToken is the secret from POST /v1/account/members; the email
	// must be the invited one.
	InviteToken string `json:"invite_token"`
}

// Validate checks every field before any work is done.
func (s Signup) Validate() error {
	if err := checkEmail("body.email", s.Email); err != nil {
		return err
	}
	if err := checkPassword("body.password", s.Password); err != nil {
		return err
	}
	if err := checkText("body.name", s.Name, 1, MaxNameLen); err != nil {
		return err
	}
	if s.AccountName != "" {
		if err := checkText("body.account_name", s.AccountName, 1, MaxNameLen); err != nil {
			return err
		}
	}
	if len(s.InviteToken) > 256 {
		return telemetry.FieldError(telemetry.EINVALID, "body.invite_token", "is not a valid invitation")
	}
	return nil
}

// Login exchanges an email and password for a session token.
type Login struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	// AccountID picks the account the session acts on; empty means the
	// account the person joined first.
	AccountID string `json:"account_id"`
}

// Validate checks presence and bounds only: a login never reveals which
// rule an unknown email or a wrong password would break.
func (l Login) Validate() error {
	if l.Email == "" {
		return telemetry.FieldError(telemetry.EINVALID, "body.email", "is required")
	}
	if len(l.Email) > MaxEmailBytes {
		return telemetry.FieldError(telemetry.EINVALID, "body.email", "must be at most %d bytes", MaxEmailBytes)
	}
	if l.Password == "" {
		return telemetry.FieldError(telemetry.EINVALID, "body.password", "is required")
	}
	if utf8.RuneCountInString(l.Password) > MaxPasswordLen {
		return telemetry.FieldError(telemetry.EINVALID, "body.password", "must be at most %d characters", MaxPasswordLen)
	}
	return nil
}

func checkPassword(field, p string) error {
	n := utf8.RuneCountInString(p)
	if n < MinPasswordLen {
		return telemetry.FieldError(telemetry.EINVALID, field, "must be at least %d characters", MinPasswordLen)
	}
	if n > MaxPasswordLen {
		return telemetry.FieldError(telemetry.EINVALID, field, "must be at most %d characters", MaxPasswordLen)
	}
	return nil
}

// Session is a freshly issued session token with who it acts as. Token is
// the only time the secret exists outside the client: only its hash is kept.
type Session struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	User      User      `json:"user"`
	Account   Account   `json:"account"`
}

// AuthService issues and revokes session tokens.
type AuthService interface {
	// Signup creates a person and a session bound to their new account (as
	// owner), or to the inviting account (in the invited role) when an
	// invitation token is given.
	// Errors: EINVALID with the field (body.invite_token for an unknown,
	// used or expired invitation; body.email when it is not the invited
	// address); ECONFLICT (body.email) when the email is taken.
	Signup(ctx context.Context, in Signup) (*Session, error)
	// Login checks the password and issues a session.
	// Errors: EINVALIDCREDENTIALS, the same for an unknown email and a wrong
	// password, in about the same time; ERATELIMITED with RetryAfter after
	// repeated failures for one email; EINVALID (body.account_id) when the
	// person is not a member of the named account; EFORBIDDEN when they
	// belong to no account at all.
	Login(ctx context.Context, in Login) (*Session, error)
	// Logout revokes the session p was authenticated with.
	// Errors: EUNAUTHENTICATED when p is not a session.
	Logout(ctx context.Context, p *Principal) error
}
