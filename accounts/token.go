package accounts

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// Personal access tokens are read credentials for scripts, notebooks and
// MCP clients: a token acts as the person who made it, in the account it
// was made in, for every read a session may make and nothing else
// (docs/mcp-endpoint.md).

// TokenScopeRead is the one scope a personal access token may have.
const TokenScopeRead = "read"

// MaxTokensPerPerson bounds a person's tokens in one account.
const MaxTokensPerPerson = 50

// PersonalToken is a personal access token as every read shows it: the
// secret is never kept or returned, only a hint to tell tokens apart.
type PersonalToken struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scope      string     `json:"scope"`
	Hint       string     `json:"hint"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// CreatedToken is a new personal access token with its secret, which
// exists outside the client only in this one response.
type CreatedToken struct {
	PersonalToken
	Token string `json:"token"`
}

// NewToken names a new personal access token and its scope.
type NewToken struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
}

// Validate checks the name and the scope ("read" only).
func (t NewToken) Validate() error {
	if err := checkText("body.name", t.Name, 1, MaxNameLen); err != nil {
		return err
	}
	if t.Scope != TokenScopeRead {
		return telemetry.FieldError(telemetry.EINVALID, "body.scope", "must be %q", TokenScopeRead)
	}
	return nil
}

// TokenHint is what reads show of a token: its prefix, a mask and the
// last four characters, e.g. pat_••••••••a1b2.
func TokenHint(token string) string { return secretHint(PersonalTokenPrefix, token) }

// TokenService manages a person's personal access tokens. Every method is
// scoped to the person and the account: another person's token is
// ENOTFOUND.
type TokenService interface {
	// ListTokens returns the person's tokens in the account, oldest
	// first, hints only.
	ListTokens(ctx context.Context, accountID, userID string) ([]PersonalToken, error)
	// CreateToken issues a token acting as the person in the account.
	// Errors: EINVALID with the field; ELIMITREACHED past
	// MaxTokensPerPerson.
	CreateToken(ctx context.Context, accountID, userID string, in NewToken) (*CreatedToken, error)
	// DeleteToken revokes a token: the next request with it is refused.
	// Errors: ENOTFOUND.
	DeleteToken(ctx context.Context, accountID, userID, tokenID string) error
}
