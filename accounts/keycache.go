package accounts

import (
	"sync"
	"time"
)

// KeyCache is the policy of ingest key authentication, which runs on every
// ingest request and so must not cost a database round trip: answers,
// positive and negative, keyed by the key's SHA-256, trusted for a short
// TTL (at most MaxKeyCacheTTL: a deleted key must stop working within 5 s
// even if nothing else works) and forgotten at once when the store
// announces a deletion. Its size is bounded, so spraying random keys costs
// lookups, not memory.
type KeyCache struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	entries map[[32]byte]keyEntry
	// gen counts evictions: a lookup that raced with one must not cache
	// its (possibly stale) answer.
	gen uint64
}

type keyEntry struct {
	p       *Principal // nil: no such key
	expires time.Time
}

// NewKeyCache returns a cache trusting answers for ttl, holding at most
// max entries.
func NewKeyCache(ttl time.Duration, max int) *KeyCache {
	return &KeyCache{ttl: ttl, max: max, entries: map[[32]byte]keyEntry{}}
}

// Get returns the cached answer for a key hash at now: hit is false when
// there is none or it expired; p is nil for a key known not to exist.
func (c *KeyCache) Get(h [32]byte, now time.Time) (p *Principal, hit bool) {
	c.mu.Lock()
	e, ok := c.entries[h]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.p, true
}

// KeyStaleFor is how long past its TTL a positive answer may still be used
// while the store cannot be reached (Stale): ingest goes on through a
// database outage for the keys it knows. No key can be deleted while the
// database is down; a deletion committed in the TTL before the outage
// whose announcement was lost is the one that may keep working until the
// database is back (the cache is flushed when announcements resume).
const KeyStaleFor = 10 * time.Minute

// Stale returns the principal of a positive answer that expired less than
// KeyStaleFor before now, or nil: only for when the store is unreachable.
func (c *KeyCache) Stale(h [32]byte, now time.Time) *Principal {
	c.mu.Lock()
	e, ok := c.entries[h]
	c.mu.Unlock()
	if !ok || e.p == nil || !now.Before(e.expires.Add(KeyStaleFor)) {
		return nil
	}
	return e.p
}

// Generation is the eviction count to pass to Put for a lookup starting
// now.
func (c *KeyCache) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Put caches the answer of a lookup that started at generation gen, unless
// an eviction happened since (the answer may predate a deletion). When the
// cache is full, expired entries are swept first and a negative answer is
// not cached.
func (c *KeyCache) Put(h [32]byte, p *Principal, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.entries) >= c.max {
		c.sweepLocked(now, 0)
	}
	if p != nil || len(c.entries) < c.max {
		c.entries[h] = keyEntry{p: p, expires: now.Add(c.ttl)}
	}
}

// Evict forgets one key by its hash.
func (c *KeyCache) Evict(h [32]byte) {
	c.mu.Lock()
	delete(c.entries, h)
	c.gen++
	c.mu.Unlock()
}

// Flush forgets every key: after a gap in the deletion announcements,
// deletions may have been missed.
func (c *KeyCache) Flush() {
	c.mu.Lock()
	clear(c.entries)
	c.gen++
	c.mu.Unlock()
}

// Sweep drops the negative entries expired at now and the positive ones
// expired KeyStaleFor before (kept for Stale).
func (c *KeyCache) Sweep(now time.Time) {
	c.mu.Lock()
	c.sweepLocked(now, KeyStaleFor)
	c.mu.Unlock()
}

// sweepLocked drops the entries expired at now, positive ones only once
// stale for longer than keep.
func (c *KeyCache) sweepLocked(now time.Time, keep time.Duration) {
	for h, e := range c.entries {
		if e.p != nil && now.Before(e.expires.Add(keep)) {
			continue
		}
		if !now.Before(e.expires) {
			delete(c.entries, h)
		}
	}
}
