package accounts

import (
	"testing"
	"time"
)

func TestKeyCache(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	c := NewKeyCache(2*time.Second, 3)
	k1, k2, k3, k4 := [32]byte{1}, [32]byte{2}, [32]byte{3}, [32]byte{4}
	p := &Principal{KeyID: "key_1"}

	if _, hit := c.Get(k1, t0); hit {
		t.Fatal("hit on an empty cache")
	}
	c.Put(k1, p, c.Generation(), t0)
	c.Put(k2, nil, c.Generation(), t0) // negative answers are cached too
	if got, hit := c.Get(k1, t0.Add(1999*time.Millisecond)); !hit || got != p {
		t.Fatalf("within the TTL: %v %v", got, hit)
	}
	if got, hit := c.Get(k2, t0.Add(time.Second)); !hit || got != nil {
		t.Fatalf("negative answer: %v %v", got, hit)
	}
	if _, hit := c.Get(k1, t0.Add(2*time.Second)); hit {
		t.Fatal("an answer outlived its TTL")
	}

	// A lookup that raced with an eviction does not cache its answer.
	gen := c.Generation()
	c.Evict(k1)
	c.Put(k1, p, gen, t0)
	if _, hit := c.Get(k1, t0); hit {
		t.Fatal("a stale answer was cached after an eviction")
	}

	// Full: expired entries are swept first; negative answers are not
	// cached while it stays full, positive ones are.
	c.Flush()
	c.Put(k1, p, c.Generation(), t0)
	c.Put(k2, p, c.Generation(), t0)
	c.Put(k3, p, c.Generation(), t0)
	c.Put(k4, nil, c.Generation(), t0)
	if _, hit := c.Get(k4, t0); hit {
		t.Fatal("a negative answer was cached past the bound")
	}
	c.Put(k4, nil, c.Generation(), t0.Add(3*time.Second)) // the others expired: swept
	if _, hit := c.Get(k4, t0.Add(3*time.Second)); !hit {
		t.Fatal("expired entries were not swept to make room")
	}
}

// While the store is unreachable, a positive answer serves for
// KeyStaleFor past its TTL (a sweep keeps it); a negative one never does,
// and an evicted or flushed key is gone.
func TestKeyCacheStale(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	c := NewKeyCache(2*time.Second, 10)
	k1, k2 := [32]byte{1}, [32]byte{2}
	p := &Principal{KeyID: "key_1"}
	c.Put(k1, p, c.Generation(), t0)
	c.Put(k2, nil, c.Generation(), t0)
	later := t0.Add(2*time.Second + KeyStaleFor/2)
	c.Sweep(later)
	if got := c.Stale(k1, later); got != p {
		t.Fatalf("stale answer within KeyStaleFor: %v", got)
	}
	if got := c.Stale(k2, t0.Add(time.Second)); got != nil {
		t.Fatalf("a negative answer served stale: %v", got)
	}
	if got := c.Stale(k1, t0.Add(2*time.Second+KeyStaleFor)); got != nil {
		t.Fatalf("stale past KeyStaleFor: %v", got)
	}
	c.Evict(k1)
	if got := c.Stale(k1, later); got != nil {
		t.Fatalf("an evicted key served stale: %v", got)
	}
}
