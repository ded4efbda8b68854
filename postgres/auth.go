package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
	"github.com/mcpscope/telemetry/internal/password"
)

// AuthService issues session tokens (signup, login), revokes them (logout)
// and resolves both credentials for httpapi.
type AuthService struct {
	db      *DB
	cfg     accounts.AuthPolicy
	pw      *password.Hasher
	limiter *accounts.AttemptLimiter
	keys    *KeyService
	now     func() time.Time
}

var (
	_ accounts.AuthService   = (*AuthService)(nil)
	_ accounts.Authenticator = (*AuthService)(nil)
)

// NewAuthService returns the service; keys resolves ingest keys (nil: every
// ingest key is refused).
func NewAuthService(db *DB, cfg accounts.AuthPolicy, keys *KeyService) *AuthService {
	cfg = cfg.WithDefaults()
	return &AuthService{db: db, cfg: cfg, pw: password.New(password.Default),
		limiter: accounts.NewFailureLimiter(cfg.LoginMaxFailures, cfg.LoginFailureWindow), keys: keys, now: time.Now}
}

var errInvalidInvite = telemetry.FieldError(telemetry.EINVALID, "body.invite_token",
	"is not a valid invitation: it is unknown, used or expired")

// Signup implements accounts.AuthService.
func (s *AuthService) Signup(ctx context.Context, in accounts.Signup) (*accounts.Session, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.InviteToken != "" && !ids.ValidSecret(in.InviteToken, prefixInviteToken) {
		return nil, errInvalidInvite
	}
	// Hash before the transaction: 27 ms of CPU should not hold locks.
	hash, err := s.pw.Hash(ctx, in.Password)
	if err != nil {
		return nil, wrap(err)
	}
	now := s.now()
	user := accounts.User{ID: ids.New(prefixUser), Email: in.Email, Name: in.Name}
	var acc accounts.Account
	token := ids.NewSecret(accounts.SessionTokenPrefix)
	expires := now.Add(s.cfg.SessionTTL).Truncate(time.Microsecond) // as PostgreSQL keeps it
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var invID string
		if in.InviteToken != "" {
			var emailKey string
			err := tx.QueryRow(ctx, `
				SELECT i.id, i.email_key, i.role, a.id, a.name, a.plan, a.created_at
				FROM invitations i JOIN accounts a ON a.id = i.account_id
				WHERE i.token_hash = $1 AND i.accepted_at IS NULL AND i.expires_at > $2
				FOR UPDATE OF i`, ids.HashSecret(in.InviteToken), now).
				Scan(&invID, &emailKey, &acc.Role, &acc.ID, &acc.Name, &acc.Plan, &acc.CreatedAt)
			if errors.Is(err, pgx.ErrNoRows) {
				return errInvalidInvite
			} else if err != nil {
				return err
			}
			if emailKey != accounts.EmailKey(in.Email) {
				return telemetry.FieldError(telemetry.EINVALID, "body.email", "must be the address the invitation was sent to")
			}
		}
		err := tx.QueryRow(ctx, `INSERT INTO users (id, email, email_key, name, password_hash) VALUES ($1, $2, $3, $4, $5)
			RETURNING created_at`, user.ID, user.Email, accounts.EmailKey(user.Email), user.Name, hash).Scan(&user.CreatedAt)
		if isUniqueViolation(err) {
			return telemetry.FieldError(telemetry.ECONFLICT, "body.email", "is already registered; log in instead")
		} else if err != nil {
			return err
		}
		if invID != "" {
			if _, err := tx.Exec(ctx, `UPDATE invitations SET accepted_at = now() WHERE id = $1`, invID); err != nil {
				return err
			}
		} else {
			acc = accounts.Account{ID: ids.New(prefixAccount), Name: in.AccountName, Plan: accounts.PlanFree, Role: accounts.RoleOwner}
			if acc.Name == "" {
				acc.Name = in.Name
			}
			if err := tx.QueryRow(ctx, `INSERT INTO accounts (id, name, plan) VALUES ($1, $2, $3) RETURNING created_at`,
				acc.ID, acc.Name, acc.Plan).Scan(&acc.CreatedAt); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, $3)`,
			acc.ID, user.ID, acc.Role); err != nil {
			return err
		}
		return insertSession(ctx, tx, token, user.ID, acc.ID, expires)
	})
	if err != nil {
		return nil, wrap(err)
	}
	user.CreatedAt, acc.CreatedAt = user.CreatedAt.UTC(), acc.CreatedAt.UTC()
	return &accounts.Session{Token: token, ExpiresAt: expires.UTC(), User: user, Account: acc}, nil
}

func insertSession(ctx context.Context, q querier, token, userID, accountID string, expires time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO sessions (id, token_hash, user_id, account_id, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		ids.New(prefixSession), ids.HashSecret(token), userID, accountID, expires)
	return err
}

var errInvalidCredentials = telemetry.Errorf(telemetry.EINVALIDCREDENTIALS, "The email or password is wrong.")

// Login implements accounts.AuthService. An unknown email and a wrong
// password take the same path: one user lookup, one argon2 verification
// (against a dummy hash when there is no such person), one answer.
func (s *AuthService) Login(ctx context.Context, in accounts.Login) (*accounts.Session, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	key := accounts.EmailKey(in.Email)
	attempted := s.now()
	if wait, limited := s.limiter.Attempt(key, attempted); limited {
		return nil, &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: telemetry.RetryAfterSeconds(wait),
			Message: "Too many failed logins for this email; try again later."}
	}
	var user accounts.User
	var hash string
	err := s.db.Pool.QueryRow(ctx, `SELECT id, email, name, password_hash, created_at FROM users WHERE email_key = $1`, key).
		Scan(&user.ID, &user.Email, &user.Name, &hash, &user.CreatedAt)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		s.limiter.Undo(key, attempted) // not judged: no failure (a database outage locks nobody out)
		return nil, wrap(err)
	}
	ok, err := s.pw.Verify(ctx, in.Password, hash)
	if err != nil {
		return nil, wrap(err)
	}
	if !ok {
		return nil, errInvalidCredentials
	}
	s.limiter.Succeeded(key)

	errNotYours := telemetry.FieldError(telemetry.EINVALID, "body.account_id", "is not an account you belong to")
	if in.AccountID != "" && !ids.Valid(in.AccountID, prefixAccount) {
		return nil, errNotYours
	}
	var acc accounts.Account
	q := `SELECT a.id, a.name, a.plan, a.created_at, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id
		WHERE m.user_id = $1 AND ($2 = '' OR m.account_id = $2) ORDER BY m.joined_at, a.id LIMIT 1`
	err = s.db.Pool.QueryRow(ctx, q, user.ID, in.AccountID).Scan(&acc.ID, &acc.Name, &acc.Plan, &acc.CreatedAt, &acc.Role)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && in.AccountID != "":
		return nil, errNotYours
	case errors.Is(err, pgx.ErrNoRows):
		return nil, telemetry.Errorf(telemetry.EFORBIDDEN, "You no longer belong to any account; ask an owner to add you again.")
	case err != nil:
		return nil, wrap(err)
	}
	token := ids.NewSecret(accounts.SessionTokenPrefix)
	expires := s.now().Add(s.cfg.SessionTTL).Truncate(time.Microsecond)
	if err := insertSession(ctx, s.db.Pool, token, user.ID, acc.ID, expires); err != nil {
		return nil, wrap(err)
	}
	user.CreatedAt, acc.CreatedAt = user.CreatedAt.UTC(), acc.CreatedAt.UTC()
	return &accounts.Session{Token: token, ExpiresAt: expires.UTC(), User: user, Account: acc}, nil
}

// Logout implements accounts.AuthService.
func (s *AuthService) Logout(ctx context.Context, p *accounts.Principal) error {
	if p == nil || p.Kind != accounts.CredentialSession {
		return telemetry.Errorf(telemetry.EUNAUTHENTICATED, "Logging out needs a session token.")
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, p.SessionID)
	return wrap(err)
}

var errBadSession = telemetry.Errorf(telemetry.EUNAUTHENTICATED, "The session token is unknown, expired or revoked; log in again.")

// AuthenticateSession implements accounts.Authenticator: a live, unrevoked
// session whose person still belongs to the session's account. The role is
// read on every request, so a role change applies at once.
func (s *AuthService) AuthenticateSession(ctx context.Context, token string) (*accounts.Principal, error) {
	if !ids.ValidSecret(token, accounts.SessionTokenPrefix) {
		return nil, errBadSession
	}
	p := &accounts.Principal{Kind: accounts.CredentialSession}
	err := s.db.Pool.QueryRow(ctx, `
		SELECT s.id, s.user_id, s.account_id, m.role, a.retention_days
		FROM sessions s JOIN memberships m ON m.account_id = s.account_id AND m.user_id = s.user_id
		JOIN accounts a ON a.id = s.account_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2`, ids.HashSecret(token), s.now()).
		Scan(&p.SessionID, &p.UserID, &p.AccountID, &p.Role, &p.RetentionDays)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errBadSession
	}
	if err != nil {
		return nil, wrap(err)
	}
	return p, nil
}

// AuthenticateIngestKey implements accounts.Authenticator through the key
// service's cache.
func (s *AuthService) AuthenticateIngestKey(ctx context.Context, key string) (*accounts.Principal, error) {
	if s.keys == nil {
		return nil, errBadKey
	}
	return s.keys.AuthenticateIngestKey(ctx, key)
}
