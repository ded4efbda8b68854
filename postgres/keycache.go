package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/internal/ids"
)

// Ingest key authentication runs on every ingest request, so it must not
// cost a database round trip. Answers, positive and negative, are cached by
// the key's SHA-256 for a short TTL (at most 5 s: a deleted key must stop
// working within 5 s even if nothing else works). On top of that every
// instance LISTENs on ingest_key_revoked, which a trigger notifies for each
// deleted key row (also when an MCP's deletion cascades), and evicts at once.

const (
	revokedChannel = "ingest_key_revoked"
	// touchEvery bounds last_used_at writes to one per key per minute per
	// instance; they are written by Run, never on the request path.
	touchEvery = time.Minute
	// maxCacheEntries bounds memory when someone sprays random keys; past
	// it, expired entries are swept and negative answers are not cached.
	maxCacheEntries = 100_000
)

type keyEntry struct {
	p       *accounts.Principal // nil: no such key
	expires time.Time
}

var errBadKey = telemetry.Errorf(telemetry.EUNAUTHENTICATED, "The ingest key is unknown or was deleted.")

// AuthenticateIngestKey implements accounts.Authenticator for ingest keys.
func (s *KeyService) AuthenticateIngestKey(ctx context.Context, key string) (*accounts.Principal, error) {
	if !ids.ValidSecret(key, accounts.IngestKeyPrefix) {
		return nil, errBadKey
	}
	h := sha256.Sum256([]byte(key))
	now := s.now()
	s.mu.Lock()
	e, ok := s.cache[h]
	s.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		v, err, _ := s.flight.Do(string(h[:]), func() (any, error) { return s.load(ctx, h) })
		if err != nil {
			return nil, err
		}
		e.p, _ = v.(*accounts.Principal)
	}
	if e.p == nil {
		return nil, errBadKey
	}
	s.touch(e.p.KeyID, now)
	p := *e.p // callers may not change the cached principal
	return &p, nil
}

// load reads one key from the database and caches the answer, unless an
// eviction happened meanwhile (the answer may predate a deletion).
func (s *KeyService) load(ctx context.Context, h [32]byte) (*accounts.Principal, error) {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	// Detached from the first caller's cancellation: others share the call.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.lookups.Add(1)
	p := &accounts.Principal{Kind: accounts.CredentialIngestKey}
	err := s.db.Pool.QueryRow(ctx, `SELECT id, mcp_id, account_id FROM ingest_keys WHERE key_hash = $1`, h[:]).
		Scan(&p.KeyID, &p.MCPID, &p.AccountID)
	if errors.Is(err, pgx.ErrNoRows) {
		p = nil
	} else if err != nil {
		return nil, wrap(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return p, nil
	}
	if len(s.cache) >= maxCacheEntries {
		s.sweepLocked(s.now())
	}
	if p != nil || len(s.cache) < maxCacheEntries {
		s.cache[h] = keyEntry{p: p, expires: s.now().Add(s.ttl)}
	}
	return p, nil
}

// evict forgets a key by its hash.
func (s *KeyService) evict(hash []byte) {
	var h [32]byte
	if copy(h[:], hash) != len(h) {
		return
	}
	s.mu.Lock()
	delete(s.cache, h)
	s.gen++
	s.mu.Unlock()
}

// flush forgets every key: after a LISTEN gap, deletions may have been missed.
func (s *KeyService) flush() {
	s.mu.Lock()
	clear(s.cache)
	s.gen++
	s.mu.Unlock()
}

func (s *KeyService) sweepLocked(now time.Time) {
	for h, e := range s.cache {
		if !now.Before(e.expires) {
			delete(s.cache, h)
		}
	}
	for id, t := range s.touched {
		if now.Sub(t) >= touchEvery {
			delete(s.touched, id)
		}
	}
}

// touch queues a last_used_at write for the key, at most once a minute.
// It never blocks: when the queue is full the write is skipped.
func (s *KeyService) touch(keyID string, now time.Time) {
	s.mu.Lock()
	last, seen := s.touched[keyID]
	due := !seen || now.Sub(last) >= touchEvery
	if due {
		s.touched[keyID] = now
	}
	s.mu.Unlock()
	if due {
		select {
		case s.touches <- keyID:
		default:
		}
	}
}

// Run keeps the cache honest until ctx is cancelled: it listens for key
// deletions (reconnecting with backoff when the connection breaks), writes
// last_used_at, and sweeps expired entries. It returns nil on cancellation.
func (s *KeyService) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { s.listen(ctx); return nil })
	g.Go(func() error { s.writeTouches(ctx); return nil })
	g.Go(func() error {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				s.mu.Lock()
				s.sweepLocked(s.now())
				s.mu.Unlock()
			}
		}
	})
	return g.Wait()
}

func (s *KeyService) listen(ctx context.Context) {
	backoff := 500 * time.Millisecond
	for {
		connected, err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			backoff = 500 * time.Millisecond
		}
		s.log.Warn("ingest key revocation listener lost; cached keys now expire by TTL only until it is back",
			"error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// listenOnce holds one dedicated connection (LISTEN cannot use a pooled
// one) until it fails or ctx ends.
func (s *KeyService) listenOnce(ctx context.Context) (connected bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+revokedChannel); err != nil {
		return false, err
	}
	s.flush()
	s.listening.Store(true)
	defer s.listening.Store(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		hash, err := hex.DecodeString(n.Payload)
		if err != nil {
			s.log.Warn("malformed ingest key revocation", "payload", n.Payload)
			continue
		}
		s.evict(hash)
	}
}

func (s *KeyService) writeTouches(ctx context.Context) {
	for {
		var batch []string
		select {
		case <-ctx.Done():
			return
		case id := <-s.touches:
			batch = append(batch, id)
		}
	drain:
		for len(batch) < 500 {
			select {
			case id := <-s.touches:
				batch = append(batch, id)
			default:
				break drain
			}
		}
		if _, err := s.db.Pool.Exec(ctx, `UPDATE ingest_keys SET last_used_at = $2 WHERE id = ANY($1)`, batch, s.now()); err != nil && ctx.Err() == nil {
			s.log.Warn("could not record ingest key use", "error", err)
		}
	}
}
