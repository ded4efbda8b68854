package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

// TokenService manages personal access tokens. Tokens are stored only as
// SHA-256; the secret appears once, in CreateToken's result. They are
// checked against the database on every request, as sessions are, so a
// deletion applies to the next request on every instance.
type TokenService struct {
	db  *DB
	now func() time.Time
}

var _ accounts.TokenService = (*TokenService)(nil)

// NewTokenService returns the service.
func NewTokenService(db *DB) *TokenService { return &TokenService{db: db, now: time.Now} }

var errTokenNotFound = telemetry.Errorf(telemetry.ENOTFOUND, "Personal access token not found.")

// ListTokens implements accounts.TokenService.
func (s *TokenService) ListTokens(ctx context.Context, accountID, userID string) ([]accounts.PersonalToken, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT id, name, scope, hint, created_at, last_used_at FROM personal_tokens
		WHERE account_id = $1 AND user_id = $2 ORDER BY created_at, id`, accountID, userID)
	if err != nil {
		return nil, wrap(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.PersonalToken, error) {
		var t accounts.PersonalToken
		err := r.Scan(&t.ID, &t.Name, &t.Scope, &t.Hint, &t.CreatedAt, &t.LastUsedAt)
		credentialTimes(&t.CreatedAt, &t.LastUsedAt)
		return t, err
	})
	if err != nil {
		return nil, wrap(err)
	}
	return list, nil
}

// CreateToken implements accounts.TokenService. The membership row's lock
// serialises a person's concurrent creations, so the cap holds exactly.
func (s *TokenService) CreateToken(ctx context.Context, accountID, userID string, in accounts.NewToken) (*accounts.CreatedToken, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	m := mintSecret(accounts.PersonalTokenPrefix, accounts.TokenHint)
	t := &accounts.CreatedToken{Token: m.secret, PersonalToken: accounts.PersonalToken{ID: ids.New(prefixToken), Name: in.Name,
		Scope: in.Scope, Hint: m.hint}}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var n int
		err := tx.QueryRow(ctx, `SELECT 1 FROM memberships WHERE account_id = $1 AND user_id = $2 FOR UPDATE`, accountID, userID).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return telemetry.Errorf(telemetry.EFORBIDDEN, "You no longer belong to this account.")
		} else if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM personal_tokens WHERE account_id = $1 AND user_id = $2`, accountID, userID).Scan(&n); err != nil {
			return err
		}
		if n >= accounts.MaxTokensPerPerson {
			return telemetry.Errorf(telemetry.ELIMITREACHED,
				"A person holds at most %d personal access tokens per account; delete one to create another.", accounts.MaxTokensPerPerson)
		}
		return tx.QueryRow(ctx, `INSERT INTO personal_tokens (id, token_hash, user_id, account_id, name, scope, hint)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at`,
			t.ID, m.hash, userID, accountID, t.Name, t.Scope, t.Hint).Scan(&t.CreatedAt)
	})
	if err != nil {
		return nil, wrap(err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

// DeleteToken implements accounts.TokenService.
func (s *TokenService) DeleteToken(ctx context.Context, accountID, userID, tokenID string) error {
	if !ids.Valid(tokenID, prefixToken) {
		return errTokenNotFound
	}
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM personal_tokens WHERE id = $1 AND account_id = $2 AND user_id = $3`,
		tokenID, accountID, userID)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return errTokenNotFound
	}
	return nil
}

var errBadToken = telemetry.Errorf(telemetry.EUNAUTHENTICATED, "The personal access token is unknown or was deleted.")

// tokenTouchEvery bounds last_used_at writes to one per token per minute.
const tokenTouchEvery = time.Minute

// AuthenticatePersonalToken implements accounts.Authenticator: a token
// whose person still belongs to its account, with their current role.
func (s *AuthService) AuthenticatePersonalToken(ctx context.Context, token string) (*accounts.Principal, error) {
	if !ids.ValidSecret(token, accounts.PersonalTokenPrefix) {
		return nil, errBadToken
	}
	p := &accounts.Principal{Kind: accounts.CredentialPersonalToken}
	var lastUsed *time.Time
	err := s.db.Pool.QueryRow(ctx, `
		SELECT t.id, t.user_id, t.account_id, m.role, a.retention_days, t.last_used_at
		FROM personal_tokens t JOIN memberships m ON m.account_id = t.account_id AND m.user_id = t.user_id
		JOIN accounts a ON a.id = t.account_id
		WHERE t.token_hash = $1`, ids.HashSecret(token)).
		Scan(&p.TokenID, &p.UserID, &p.AccountID, &p.Role, &p.RetentionDays, &lastUsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, wrap(err)
	}
	if now := s.now(); lastUsed == nil || now.Sub(*lastUsed) >= tokenTouchEvery {
		// At most once a minute per token: a read does not cost a write.
		if _, err := s.db.Pool.Exec(ctx, `UPDATE personal_tokens SET last_used_at = $2 WHERE id = $1`, p.TokenID, now); err != nil {
			return nil, wrap(err)
		}
	}
	return p, nil
}
