package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

// MCPService stores MCPs. Every query carries the account id, so another
// account's MCP is indistinguishable from a missing one.
type MCPService struct {
	db   *DB
	keys *KeyService
}

var _ accounts.MCPService = (*MCPService)(nil)

// NewMCPService returns the service; keys (optional) is told about the keys
// a deletion removes, so this instance refuses them at once.
func NewMCPService(db *DB, keys *KeyService) *MCPService { return &MCPService{db: db, keys: keys} }

const mcpColumns = `id, account_id, name, description, created_at, redaction_enabled, redaction_patterns, session_idle_minutes`

func scanMCP(r pgx.Row) (accounts.MCP, error) {
	var m accounts.MCP
	err := r.Scan(&m.ID, &m.AccountID, &m.Name, &m.Description, &m.CreatedAt, &m.Redaction.Enabled, &m.Redaction.Patterns, &m.SessionIdleMinutes)
	if m.Redaction.Patterns == nil {
		m.Redaction.Patterns = []string{}
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, err
}

// ListMCPs implements accounts.MCPService.
func (s *MCPService) ListMCPs(ctx context.Context, accountID string) ([]accounts.MCP, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+mcpColumns+` FROM mcps WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.MCP, error) { return scanMCP(r) })
	return ms, wrap(err)
}

// CreateMCP implements accounts.MCPService.
func (s *MCPService) CreateMCP(ctx context.Context, accountID string, in accounts.NewMCP) (*accounts.MCP, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	m, err := scanMCP(s.db.Pool.QueryRow(ctx, `INSERT INTO mcps (id, account_id, name, description) VALUES ($1, $2, $3, $4)
		RETURNING `+mcpColumns, ids.New(prefixMCP), accountID, in.Name, in.Description))
	if err != nil {
		return nil, wrap(err)
	}
	return &m, nil
}

// FindMCP implements accounts.MCPService.
func (s *MCPService) FindMCP(ctx context.Context, accountID, id string) (*accounts.MCP, error) {
	if !ids.Valid(id, prefixMCP) {
		return nil, errMCPNotFound
	}
	m, err := scanMCP(s.db.Pool.QueryRow(ctx, `SELECT `+mcpColumns+` FROM mcps WHERE id = $1 AND account_id = $2`, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errMCPNotFound
	} else if err != nil {
		return nil, wrap(err)
	}
	return &m, nil
}

// UpdateMCP implements accounts.MCPService.
func (s *MCPService) UpdateMCP(ctx context.Context, accountID, id string, upd accounts.MCPUpdate) (*accounts.MCP, error) {
	if !ids.Valid(id, prefixMCP) {
		return nil, errMCPNotFound
	}
	if err := upd.Validate(); err != nil {
		return nil, err
	}
	m, err := scanMCP(s.db.Pool.QueryRow(ctx, `UPDATE mcps SET name = COALESCE($3, name), description = COALESCE($4, description),
		redaction_enabled = COALESCE($5, redaction_enabled), redaction_patterns = COALESCE($6, redaction_patterns),
		session_idle_minutes = COALESCE($7, session_idle_minutes)
		WHERE id = $1 AND account_id = $2 RETURNING `+mcpColumns, id, accountID, upd.Name, upd.Description,
		upd.RedactionEnabled, upd.RedactionPatterns, upd.SessionIdleMinutes))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errMCPNotFound
	} else if err != nil {
		return nil, wrap(err)
	}
	return &m, nil
}

// DeleteMCP implements accounts.MCPService. Its keys go by cascade (and
// are announced by the revocation trigger); tables of other domains that
// reference mcps cascade the same way.
func (s *MCPService) DeleteMCP(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, prefixMCP) {
		return errMCPNotFound
	}
	var hashes [][]byte
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT key_hash FROM ingest_keys WHERE mcp_id = $1 AND account_id = $2`, id, accountID)
		if err != nil {
			return err
		}
		if hashes, err = pgx.CollectRows(rows, pgx.RowTo[[]byte]); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM mcps WHERE id = $1 AND account_id = $2`, id, accountID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errMCPNotFound
		}
		// Its telemetry goes in the background (accounts.DeletionPass).
		return s.db.requestMCPDeletion(ctx, tx, accountID, id)
	})
	if err != nil {
		return wrap(err)
	}
	if s.keys != nil {
		for _, h := range hashes {
			s.keys.evict(h)
		}
	}
	return nil
}
