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

// Ingest key answers are cached by accounts.KeyCache (its policy: TTL,
// bound, eviction). On top of that every instance LISTENs on
// ingest_key_revoked, which a trigger notifies for each deleted key row
// (also when an MCP's deletion cascades), and evicts at once.

const (
	revokedChannel = "ingest_key_revoked"
	// touchEvery bounds last_used_at writes to one per key per minute per
	// instance; they are written by Run, never on the request path.
	touchEvery = time.Minute
	// maxCacheEntries bounds memory when someone sprays random keys; past
	// it, expired entries are swept and negative answers are not cached.
	maxCacheEntries = 100_000
)

var errBadKey = telemetry.Errorf(telemetry.EUNAUTHENTICATED, "The ingest key is unknown or was deleted.")

// AuthenticateIngestKey implements accounts.Authenticator for ingest keys.
func (s *KeyService) AuthenticateIngestKey(ctx context.Context, key string) (*accounts.Principal, error) {
	if !ids.ValidSecret(key, accounts.IngestKeyPrefix) {
		return nil, errBadKey
	}
	h := sha256.Sum256([]byte(key))
	now := s.now()
	cached, hit := s.cache.Get(h, now)
	if !hit {
		v, err, _ := s.flight.Do(string(h[:]), func() (any, error) { return s.load(ctx, h) })
		switch {
		case err == nil:
			cached, _ = v.(*accounts.Principal)
		case telemetry.ErrorCode(err) == telemetry.EUNAVAILABLE && s.cache.Stale(h, now) != nil:
			// The database is down: a key known a moment ago still works
			// (accounts.KeyStaleFor), so ingest goes on through the outage.
			cached = s.cache.Stale(h, now)
		default:
			return nil, err
		}
	}
	if cached == nil {
		return nil, errBadKey
	}
	s.touch(cached.KeyID, now)
	p := *cached // callers may not change the cached principal
	return &p, nil
}

// load reads one key from the database and caches the answer.
func (s *KeyService) load(ctx context.Context, h [32]byte) (*accounts.Principal, error) {
	gen := s.cache.Generation()
	// Detached from the first caller's cancellation: others share the call.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.lookups.Add(1)
	p := &accounts.Principal{Kind: accounts.CredentialIngestKey}
	// The MCP's redaction setting rides along, compiled once per lookup:
	// ingest applies it without a round trip, and a change reaches every
	// instance within the cache TTL.
	var red accounts.Redaction
	err := s.db.Pool.QueryRow(ctx, `SELECT k.id, k.mcp_id, k.account_id, m.redaction_enabled, m.redaction_patterns
		FROM ingest_keys k JOIN mcps m ON m.id = k.mcp_id WHERE k.key_hash = $1`, h[:]).
		Scan(&p.KeyID, &p.MCPID, &p.AccountID, &red.Enabled, &red.Patterns)
	p.Redactor = accounts.NewRedactor(red)
	if errors.Is(err, pgx.ErrNoRows) {
		p = nil
	} else if err != nil {
		return nil, wrap(err)
	}
	s.cache.Put(h, p, gen, s.now())
	return p, nil
}

// evict forgets a key by its hash, as announced by the database.
func (s *KeyService) evict(hash []byte) {
	var h [32]byte
	if copy(h[:], hash) == len(h) {
		s.cache.Evict(h)
	}
}

// sweepTouched forgets last_used_at write times older than touchEvery.
func (s *KeyService) sweepTouched(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
// deletions (reconnecting with backoff when the connection breaks) and
// writes last_used_at. It returns nil on cancellation. Expired entries are
// swept by SweepPass, run as a background job (cmd/telemetryd/jobs.go).
func (s *KeyService) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { s.listen(ctx); return nil })
	g.Go(func() error { s.writeTouches(ctx); return nil })
	return g.Wait()
}

// SweepEvery is how often SweepPass should run.
const SweepEvery = time.Minute

// SweepPass drops the cache's expired entries and the touch marks past
// their minute. It cannot fail.
func (s *KeyService) SweepPass(context.Context) error {
	now := s.now()
	s.cache.Sweep(now)
	s.sweepTouched(now)
	return nil
}

func (s *KeyService) listen(ctx context.Context) {
	b := telemetry.Backoff{Base: 500 * time.Millisecond, Max: 30 * time.Second}
	_ = b.Retry(ctx, func() error {
		connected, err := s.listenOnce(ctx)
		if connected {
			b.Reset()
		}
		if err == nil {
			err = errors.New("listener ended")
		}
		return err
	}, func(err error, wait time.Duration) {
		s.log.Warn("ingest key revocation listener lost; cached keys now expire by TTL only until it is back",
			"error", err, "retry_in", wait)
	})
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
	s.cache.Flush()
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
