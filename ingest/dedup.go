package ingest

import (
	"hash/maphash"
	"sync"
	"time"
)

// Dedup remembers which item ids each MCP had accepted in the last window
// (24 h by contract), so that a retried batch never double counts. It keeps a
// 64-bit hash of (mcp, id) and the acceptance time in seconds since the
// filter was made (32 bits: 136 years): about 20 bytes an id. A
// false positive needs a 64-bit collision within one window (negligible).
//
// It is rebuilt on start from ClickHouse (ids received in the window, by
// any instance) and from the write-ahead log (ids accepted but not flushed
// yet).
//
// Each instance has its own filter: a retry that reaches another instance
// than its first attempt is recognised only if that instance started after
// the first attempt was flushed. With several instances, route each ingest
// key to one instance (hash the Authorization header at the load balancer)
// to keep the guarantee (README, "Running at scale": why no shared filter).
type Dedup struct {
	window time.Duration
	seed   maphash.Seed
	base   int64 // Unix seconds that stored times count from (dedupEpoch)
	shards [64]dedupShard
}

type dedupShard struct {
	mu   sync.Mutex
	seen map[uint64]uint32 // hash -> accepted at (seconds since base)
}

// NewDedup returns an empty filter for the given window.
func NewDedup(window time.Duration) *Dedup {
	d := &Dedup{window: window, seed: maphash.MakeSeed(), base: dedupEpoch}
	for i := range d.shards {
		d.shards[i].seen = make(map[uint64]uint32)
	}
	return d
}

func (d *Dedup) key(mcpID, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteString(mcpID)
	h.WriteByte(0)
	h.WriteString(id)
	return h.Sum64()
}

// Reserve records (mcp, id) as accepted at now and reports true, or reports
// false when it was already accepted within the window.
func (d *Dedup) Reserve(mcpID, id string, now time.Time) bool {
	k := d.key(mcpID, id)
	s := &d.shards[k%uint64(len(d.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	at := d.stamp(now)
	if prev, ok := s.seen[k]; ok && int64(at)-int64(prev) < int64(d.window/time.Second) {
		return false
	}
	s.seen[k] = at
	return true
}

// dedupEpoch is 2020-01-01T00:00:00Z: 32-bit seconds from it last until 2156.
const dedupEpoch = 1577836800

// stamp turns a time into stored seconds, clamped to the 32-bit range.
func (d *Dedup) stamp(t time.Time) uint32 {
	s := t.Unix() - d.base
	if s < 0 {
		return 0
	}
	if s > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(s)
}

// Release forgets a reservation whose batch could not be made durable, so
// that the client's retry is accepted.
func (d *Dedup) Release(mcpID, id string) {
	k := d.key(mcpID, id)
	s := &d.shards[k%uint64(len(d.shards))]
	s.mu.Lock()
	delete(s.seen, k)
	s.mu.Unlock()
}

// Sweep drops ids older than the window; call it periodically.
func (d *Dedup) Sweep(now time.Time) (remaining int) {
	cutoff := d.stamp(now.Add(-d.window))
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		for k, at := range s.seen {
			if at <= cutoff {
				delete(s.seen, k)
			}
		}
		remaining += len(s.seen)
		s.mu.Unlock()
	}
	return remaining
}

// Len is the number of ids remembered.
func (d *Dedup) Len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		n += len(s.seen)
		s.mu.Unlock()
	}
	return n
}
