package postgres

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

// prefixVerifyToken starts the secret of an email verification link.
const prefixVerifyToken = "evt_"

// VerificationService stores email verifications: one pending token per
// person (its SHA-256 only), for the address it was made for.
type VerificationService struct {
	db  *DB
	now func() time.Time
}

var _ accounts.VerificationService = (*VerificationService)(nil)

// NewVerificationService returns the service.
func NewVerificationService(db *DB) *VerificationService {
	return &VerificationService{db: db, now: time.Now}
}

var errBadVerifyToken = telemetry.FieldError(telemetry.EINVALID, "body.token",
	"is unknown, used or expired, or your address changed since it was sent: ask for a new message from your profile")

// StartVerification implements accounts.VerificationService. The person's
// row is locked, so two concurrent re-sends cannot both pass the limit.
func (s *VerificationService) StartVerification(ctx context.Context, userID string, resend bool) (*accounts.PendingVerification, error) {
	var out *accounts.PendingVerification
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		pv := accounts.PendingVerification{UserID: userID}
		var verified bool
		var sentAt *time.Time
		var key string
		err := tx.QueryRow(ctx, `SELECT email, email_key, name, email_verified_at IS NOT NULL, verification_sent_at
			FROM users WHERE id = $1 FOR UPDATE`, userID).Scan(&pv.Email, &key, &pv.Name, &verified, &sentAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return telemetry.Errorf(telemetry.ENOTFOUND, "Person not found.")
		} else if err != nil {
			return err
		}
		if verified {
			return telemetry.Errorf(telemetry.ECONFLICT, "Your email address is verified already.")
		}
		now := s.now()
		if resend && sentAt != nil {
			if wait := sentAt.Add(accounts.VerificationResendInterval).Sub(now); wait > 0 {
				return &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: int(math.Ceil(wait.Seconds())),
					Message: "A verification message was sent less than a minute ago; wait before asking again."}
			}
		}
		pv.Token = ids.NewSecret(prefixVerifyToken)
		pv.ExpiresAt = now.Add(accounts.VerificationTTL).UTC()
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO email_verifications (token_hash, user_id, email_key, expires_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, email_key = EXCLUDED.email_key,
				expires_at = EXCLUDED.expires_at, created_at = now()`, ids.HashSecret(pv.Token), userID, key, pv.ExpiresAt)
		b.Queue(`UPDATE users SET verification_sent_at = $2 WHERE id = $1`, userID, now)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		out = &pv
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	return out, nil
}

// Verify implements accounts.VerificationService: the token is deleted
// whatever it proves (single use), and verifies only the address it was
// made for while it is still the person's.
func (s *VerificationService) Verify(ctx context.Context, token string) (*accounts.Profile, error) {
	if !ids.ValidSecret(token, prefixVerifyToken) {
		return nil, errBadVerifyToken
	}
	var prof *accounts.Profile
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var userID, key string
		var expires time.Time
		err := tx.QueryRow(ctx, `DELETE FROM email_verifications WHERE token_hash = $1 RETURNING user_id, email_key, expires_at`,
			ids.HashSecret(token)).Scan(&userID, &key, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return errBadVerifyToken
		} else if err != nil {
			return err
		}
		if !s.now().Before(expires) {
			return errBadVerifyToken
		}
		prof, err = scanProfile(tx.QueryRow(ctx, `UPDATE users SET email_verified_at = COALESCE(email_verified_at, now())
			WHERE id = $1 AND email_key = $2 RETURNING `+profileColumns, userID, key))
		if telemetry.ErrorCode(err) == telemetry.ENOTFOUND {
			return errBadVerifyToken
		}
		return err
	})
	if err != nil {
		return nil, wrap(err)
	}
	return prof, nil
}
