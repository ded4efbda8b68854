package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/ids"
)

// DeletionService stores the requests to delete telemetry (data_deletions,
// migration 006); the worker claims them with FOR UPDATE SKIP LOCKED, so
// instances share the queue without doing a request twice at once.
type DeletionService struct {
	db *DB
	// StaleAfter is how long a running request may go unfinished before
	// another worker claims it again (its instance probably died; the
	// deletions are idempotent). Default 30 minutes.
	StaleAfter time.Duration
}

var _ accounts.DeletionService = (*DeletionService)(nil)

// NewDeletionService returns the service.
func NewDeletionService(db *DB) *DeletionService {
	return &DeletionService{db: db, StaleAfter: 30 * time.Minute}
}

var errDeletionNotFound = telemetry.Errorf(telemetry.ENOTFOUND, "Deletion request not found.")

const deletionColumns = `id, account_id, kind, mcp_id, user_id, status, created_at, finished_at`

func scanDeletion(r pgx.Row) (*accounts.Deletion, error) {
	var d accounts.Deletion
	if err := r.Scan(&d.ID, &d.AccountID, &d.Kind, &d.MCPID, &d.UserID, &d.Status, &d.CreatedAt, &d.FinishedAt); err != nil {
		return nil, err
	}
	d.CreatedAt = d.CreatedAt.UTC()
	if d.FinishedAt != nil {
		t := d.FinishedAt.UTC()
		d.FinishedAt = &t
	}
	return &d, nil
}

// RequestUserDeletion implements accounts.DeletionService. In the same
// transaction it deletes the person's derived-session state in the MCP
// (auto_sessions, docs/sessions.md).
func (s *DeletionService) RequestUserDeletion(ctx context.Context, accountID, mcpID, userID string) (*accounts.Deletion, error) {
	if !ids.Valid(mcpID, prefixMCP) {
		return nil, errMCPNotFound
	}
	if userID == "" || len([]rune(userID)) > analytics.MaxShortStringLen {
		return nil, telemetry.FieldError(telemetry.EINVALID, "path.user_id", "A user id has 1 to %d characters.", analytics.MaxShortStringLen)
	}
	var d *accounts.Deletion
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var err error
		d, err = scanDeletion(tx.QueryRow(ctx, `INSERT INTO data_deletions (id, account_id, kind, mcp_id, user_id)
			SELECT $1, account_id, 'user', id, $3 FROM mcps WHERE id = $2 AND account_id = $4
			RETURNING `+deletionColumns, ids.New(prefixDeletion), mcpID, userID, accountID))
		if errors.Is(err, pgx.ErrNoRows) {
			return errMCPNotFound
		}
		if err != nil {
			return err
		}
		// The person's derived-session state goes at once (its items
		// follow with the request): their later items begin afresh.
		if _, err := tx.Exec(ctx, `DELETE FROM auto_sessions WHERE mcp_id = $1 AND identity = $2`,
			mcpID, storedIdentity(analytics.SessionIdentity(&analytics.Item{UserID: userID}))); err != nil {
			return err
		}
		return s.db.limitDeletions(ctx, tx, accountID)
	})
	if err != nil {
		return nil, wrap(err)
	}
	return d, nil
}

// limitDeletions refuses, with ERATELIMITED, a deletion request that
// would make the account's requests of the last hour (both kinds, this one
// included, already inserted by tx) more than db.DeletionsPerHour, and the
// transaction with it. A transaction lock per account serializes its
// requests, so that concurrent ones cannot pass the limit together.
func (db *DB) limitDeletions(ctx context.Context, tx pgx.Tx, accountID string) error {
	perHour := db.DeletionsPerHour
	if perHour <= 0 {
		perHour = accounts.DefaultDeletionsPerHour
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockDeletions, accountID); err != nil {
		return err
	}
	var (
		n    int
		wait float64 // seconds until the oldest counted request is an hour old
	)
	err := tx.QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(EPOCH FROM min(created_at) + interval '1 hour' - now()), 0)
		FROM (SELECT created_at FROM data_deletions WHERE account_id = $1 AND created_at > now() - interval '1 hour'
			ORDER BY created_at DESC LIMIT $2) recent`, accountID, perHour+1).Scan(&n, &wait)
	if err != nil {
		return err
	}
	if n > perHour {
		return &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: telemetry.RetryAfterSeconds(time.Duration(wait * float64(time.Second))),
			Message: fmt.Sprintf("This account made %d deletion requests (of a person's data or deleting an MCP) in the last hour, "+
				"as many as it may; retry after the Retry-After delay.", perHour)}
	}
	return nil
}

// requestMCPDeletion records, inside the transaction deleting the MCP,
// the deletion of its telemetry, within the account's limit of deletion
// requests (limitDeletions: refused, the MCP stays).
func (db *DB) requestMCPDeletion(ctx context.Context, tx pgx.Tx, accountID, mcpID string) error {
	_, err := tx.Exec(ctx, `INSERT INTO data_deletions (id, account_id, kind, mcp_id) VALUES ($1, $2, 'mcp', $3)`,
		ids.New(prefixDeletion), accountID, mcpID)
	if err != nil {
		return err
	}
	return db.limitDeletions(ctx, tx, accountID)
}

// FindDeletion implements accounts.DeletionService.
func (s *DeletionService) FindDeletion(ctx context.Context, accountID, id string) (*accounts.Deletion, error) {
	if !ids.Valid(id, prefixDeletion) {
		return nil, errDeletionNotFound
	}
	d, err := scanDeletion(s.db.Pool.QueryRow(ctx, `SELECT `+deletionColumns+` FROM data_deletions WHERE id = $1 AND account_id = $2`, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errDeletionNotFound
	}
	return d, wrap(err)
}

// ClaimDeletion implements accounts.DeletionService.
func (s *DeletionService) ClaimDeletion(ctx context.Context) (*accounts.Deletion, error) {
	d, err := scanDeletion(s.db.Pool.QueryRow(ctx, `UPDATE data_deletions SET status = 'running', started_at = now()
		WHERE id = (SELECT id FROM data_deletions
			WHERE status = 'pending' OR (status = 'running' AND started_at < now() - make_interval(secs => $1))
			ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+deletionColumns, s.StaleAfter.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return d, wrap(err)
}

// FinishDeletion implements accounts.DeletionService.
func (s *DeletionService) FinishDeletion(ctx context.Context, id string, cause error) error {
	status, msg := accounts.DeletionDone, (*string)(nil)
	if cause != nil {
		status = accounts.DeletionFailed
		m := cause.Error()
		msg = &m
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE data_deletions SET status = $2, error = $3, finished_at = now() WHERE id = $1`, id, status, msg)
	return wrap(err)
}
