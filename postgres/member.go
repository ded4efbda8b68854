package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/ids"
)

// MemberService stores memberships and invitations. Changes to one
// account's people run under a lock on the account row, which is what
// keeps "at least one owner" true under concurrency.
type MemberService struct {
	db  *DB
	now func() time.Time
}

var _ accounts.MemberService = (*MemberService)(nil)

// NewMemberService returns the service.
func NewMemberService(db *DB) *MemberService { return &MemberService{db: db, now: time.Now} }

var errMemberNotFound = telemetry.Errorf(telemetry.ENOTFOUND, "Member not found.")

var errLastOwner = telemetry.Errorf(telemetry.ECONFLICT,
	"An account must keep at least one owner: make someone else owner first.")

const memberQuery = `SELECT m.user_id, u.email, u.email_verified_at IS NOT NULL, u.name, m.role, m.joined_at
	FROM memberships m JOIN users u ON u.id = m.user_id`

func scanMember(r pgx.Row) (accounts.Member, error) {
	var m accounts.Member
	err := r.Scan(&m.UserID, &m.Email, &m.EmailVerified, &m.Name, &m.Role, &m.JoinedAt)
	m.JoinedAt = m.JoinedAt.UTC()
	return m, err
}

// ListMembers implements accounts.MemberService.
func (s *MemberService) ListMembers(ctx context.Context, accountID string) (*accounts.MemberList, error) {
	rows, err := s.db.Pool.Query(ctx, memberQuery+` WHERE m.account_id = $1 ORDER BY m.joined_at, m.user_id`, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	members, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.Member, error) { return scanMember(r) })
	if err != nil {
		return nil, wrap(err)
	}
	rows, err = s.db.Pool.Query(ctx, `SELECT id, email, role, created_at, expires_at FROM invitations
		WHERE account_id = $1 AND accepted_at IS NULL AND expires_at > $2 ORDER BY created_at, id`, accountID, s.now())
	if err != nil {
		return nil, wrap(err)
	}
	invs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.Invitation, error) {
		var i accounts.Invitation
		err := r.Scan(&i.ID, &i.Email, &i.Role, &i.CreatedAt, &i.ExpiresAt)
		i.CreatedAt, i.ExpiresAt = i.CreatedAt.UTC(), i.ExpiresAt.UTC()
		return i, err
	})
	if err != nil {
		return nil, wrap(err)
	}
	return &accounts.MemberList{Items: members, Invitations: invs}, nil
}

// AddMember implements accounts.MemberService.
func (s *MemberService) AddMember(ctx context.Context, p *accounts.Principal, in accounts.NewMember) (*accounts.AddedMember, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := accounts.CheckRoleChange(p.Role, "", in.Role); err != nil {
		return nil, err
	}
	key := accounts.EmailKey(in.Email)
	out := &accounts.AddedMember{}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := lockAccount(ctx, tx, p.AccountID); err != nil {
			return err
		}
		var userID string
		err := tx.QueryRow(ctx, `SELECT id FROM users WHERE email_key = $1`, key).Scan(&userID)
		switch {
		case err == nil:
			_, err = tx.Exec(ctx, `INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, $3)`, p.AccountID, userID, in.Role)
			if isUniqueViolation(err) {
				return telemetry.FieldError(telemetry.ECONFLICT, "body.email", "is already a member of this account")
			} else if err != nil {
				return err
			}
			// An invitation they no longer need would linger in the list.
			if _, err := tx.Exec(ctx, `DELETE FROM invitations WHERE account_id = $1 AND email_key = $2 AND accepted_at IS NULL`,
				p.AccountID, key); err != nil {
				return err
			}
			m, err := scanMember(tx.QueryRow(ctx, memberQuery+` WHERE m.account_id = $1 AND m.user_id = $2`, p.AccountID, userID))
			out.Member = &m
			return err
		case errors.Is(err, pgx.ErrNoRows):
			// Inviting again replaces the pending invitation: the old token
			// stops working, which is how a lost token is recovered.
			if _, err := tx.Exec(ctx, `DELETE FROM invitations WHERE account_id = $1 AND email_key = $2 AND accepted_at IS NULL`,
				p.AccountID, key); err != nil {
				return err
			}
			token := ids.NewSecret(prefixInviteToken)
			inv := accounts.Invitation{ID: ids.New(prefixInvitation), Email: in.Email, Role: in.Role}
			err := tx.QueryRow(ctx, `INSERT INTO invitations (id, account_id, email, email_key, role, token_hash, created_by, expires_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at, expires_at`,
				inv.ID, p.AccountID, inv.Email, key, inv.Role, ids.HashSecret(token), p.UserID, s.now().Add(accounts.InvitationTTL)).
				Scan(&inv.CreatedAt, &inv.ExpiresAt)
			inv.CreatedAt, inv.ExpiresAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC()
			out.Invitation, out.InviteToken = &inv, token
			return err
		default:
			return err
		}
	})
	if err != nil {
		return nil, wrap(err)
	}
	return out, nil
}

// UpdateMember implements accounts.MemberService.
func (s *MemberService) UpdateMember(ctx context.Context, p *accounts.Principal, userID string, upd accounts.MemberUpdate) (*accounts.Member, error) {
	if !ids.Valid(userID, prefixUser) {
		return nil, errMemberNotFound
	}
	if err := upd.Validate(); err != nil {
		return nil, err
	}
	var m accounts.Member
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := s.checkChange(ctx, tx, p, userID, upd.Role); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE memberships SET role = $3 WHERE account_id = $1 AND user_id = $2`, p.AccountID, userID, upd.Role); err != nil {
			return err
		}
		var err error
		m, err = scanMember(tx.QueryRow(ctx, memberQuery+` WHERE m.account_id = $1 AND m.user_id = $2`, p.AccountID, userID))
		return err
	})
	if err != nil {
		return nil, wrap(err)
	}
	return &m, nil
}

// RemoveMember implements accounts.MemberService.
func (s *MemberService) RemoveMember(ctx context.Context, p *accounts.Principal, userID string) error {
	if !ids.Valid(userID, prefixUser) {
		return errMemberNotFound
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := s.checkChange(ctx, tx, p, userID, ""); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`, p.AccountID, userID); err != nil {
			return err
		}
		// Everything they held ends with the membership: sessions,
		// personal access tokens (deleted, so that re-adding the person
		// does not revive them), and the email still waiting for them.
		b := &pgx.Batch{}
		b.Queue(`UPDATE sessions SET revoked_at = now() WHERE account_id = $1 AND user_id = $2 AND revoked_at IS NULL`,
			p.AccountID, userID)
		b.Queue(`DELETE FROM personal_tokens WHERE account_id = $1 AND user_id = $2`, p.AccountID, userID)
		b.Queue(`UPDATE deliveries SET status = 'failed', last_error = $3, next_attempt_at = NULL,
				lease_owner = NULL, lease_until = NULL
			WHERE account_id = $1 AND recipient_user_id = $2 AND status = 'queued'`, p.AccountID, userID, alerting.ErrCodeNotMember)
		return tx.SendBatch(ctx, b).Close()
	})
	return wrap(err)
}

// checkChange locks the account and decides whether p may move userID to
// role `to` ("" removes): the member must exist in p's account, the caller's
// role must allow it, and an owner must remain.
func (s *MemberService) checkChange(ctx context.Context, tx pgx.Tx, p *accounts.Principal, userID string, to accounts.Role) error {
	if err := lockAccount(ctx, tx, p.AccountID); err != nil {
		return err
	}
	var from accounts.Role
	err := tx.QueryRow(ctx, `SELECT role FROM memberships WHERE account_id = $1 AND user_id = $2`, p.AccountID, userID).Scan(&from)
	if errors.Is(err, pgx.ErrNoRows) {
		return errMemberNotFound
	} else if err != nil {
		return err
	}
	if err := accounts.CheckRoleChange(p.Role, from, to); err != nil {
		return err
	}
	if from == accounts.RoleOwner && to != accounts.RoleOwner {
		var owners int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM memberships WHERE account_id = $1 AND role = 'owner'`, p.AccountID).Scan(&owners); err != nil {
			return err
		}
		if owners <= 1 {
			return errLastOwner
		}
	}
	return nil
}
