package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/singleflight"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

// KeyService manages ingest keys and authenticates them. Keys are stored
// only as SHA-256; the secret appears once, in CreateKey's result.
type KeyService struct {
	db  *DB
	log *slog.Logger
	now func() time.Time

	cache *accounts.KeyCache

	mu sync.Mutex
	// touched is when each key's last_used_at was last queued for writing.
	touched map[string]time.Time

	flight    singleflight.Group
	touches   chan string
	lookups   atomic.Int64 // database lookups, for tests and metrics
	listening atomic.Bool
}

var _ accounts.KeyService = (*KeyService)(nil)

// NewKeyService returns the service. cacheTTL (default and bound in
// accounts.AuthPolicy) is
// how long an authentication answer, positive or negative, is trusted
// without a database round trip. Run must be running for deletions on
// other instances to evict at once and for last_used_at to be written.
func NewKeyService(db *DB, cacheTTL time.Duration) *KeyService {
	cacheTTL = accounts.AuthPolicy{KeyCacheTTL: cacheTTL}.WithDefaults().KeyCacheTTL
	return &KeyService{db: db, log: db.log, now: time.Now,
		cache: accounts.NewKeyCache(cacheTTL, maxCacheEntries), touched: map[string]time.Time{}, touches: make(chan string, 1024)}
}

var errMCPNotFound = telemetry.Errorf(telemetry.ENOTFOUND, "MCP not found.")
var errKeyNotFound = telemetry.Errorf(telemetry.ENOTFOUND, "Ingest key not found.")

// ListKeys implements accounts.KeyService.
func (s *KeyService) ListKeys(ctx context.Context, accountID, mcpID string) ([]accounts.IngestKey, error) {
	if err := mcpExists(ctx, s.db.Pool, accountID, mcpID); err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT id, mcp_id, name, hint, created_at, last_used_at FROM ingest_keys
		WHERE mcp_id = $1 AND account_id = $2 ORDER BY created_at, id`, mcpID, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.IngestKey, error) {
		var k accounts.IngestKey
		err := r.Scan(&k.ID, &k.MCPID, &k.Name, &k.Hint, &k.CreatedAt, &k.LastUsedAt)
		credentialTimes(&k.CreatedAt, &k.LastUsedAt)
		return k, err
	})
	if err != nil {
		return nil, wrap(err)
	}
	return keys, nil
}

func mcpExists(ctx context.Context, q querier, accountID, mcpID string) error {
	if !ids.Valid(mcpID, prefixMCP) {
		return errMCPNotFound
	}
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mcps WHERE id = $1 AND account_id = $2)`, mcpID, accountID).Scan(&ok); err != nil {
		return wrap(err)
	}
	if !ok {
		return errMCPNotFound
	}
	return nil
}

// CreateKey implements accounts.KeyService.
func (s *KeyService) CreateKey(ctx context.Context, accountID, mcpID string, in accounts.NewKey) (*accounts.CreatedKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if !ids.Valid(mcpID, prefixMCP) {
		return nil, errMCPNotFound
	}
	m := mintSecret(accounts.IngestKeyPrefix, accounts.KeyHint)
	k := &accounts.CreatedKey{Key: m.secret, IngestKey: accounts.IngestKey{ID: ids.New(prefixKey), MCPID: mcpID, Name: in.Name, Hint: m.hint}}
	err := s.db.Pool.QueryRow(ctx, `
		INSERT INTO ingest_keys (id, mcp_id, account_id, name, key_hash, hint)
		SELECT $1, m.id, m.account_id, $4, $5, $6 FROM mcps m WHERE m.id = $2 AND m.account_id = $3
		RETURNING created_at`, k.ID, mcpID, accountID, k.Name, m.hash, k.Hint).Scan(&k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errMCPNotFound
	} else if err != nil {
		return nil, wrap(err)
	}
	k.CreatedAt = k.CreatedAt.UTC()
	return k, nil
}

// DeleteKey implements accounts.KeyService. This instance forgets the key
// at once; the others hear of it through NOTIFY (or their cache expires).
func (s *KeyService) DeleteKey(ctx context.Context, accountID, keyID string) error {
	if !ids.Valid(keyID, prefixKey) {
		return errKeyNotFound
	}
	var hash []byte
	err := s.db.Pool.QueryRow(ctx, `DELETE FROM ingest_keys WHERE id = $1 AND account_id = $2 RETURNING key_hash`,
		keyID, accountID).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return errKeyNotFound
	} else if err != nil {
		return wrap(err)
	}
	s.evict(hash)
	return nil
}
