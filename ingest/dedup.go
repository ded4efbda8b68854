package ingest

import (
	"hash/maphash"
	"sync"
	"time"
)

// Dedup remembers which item ids each MCP had accepted in the last window
// (24 h by contract), so that a retried batch never double counts. It keeps a
// 64-bit hash of (mcp, id) and the acceptance time in seconds since 2020 in
// an open-addressing table of two flat arrays: 12 bytes a slot, about 20 an
// id, nothing for the garbage collector to scan. A false positive needs a
// 64-bit collision within one window (negligible).
//
// It is rebuilt on start from ClickHouse (ids received in the window) and
// from the write-ahead log (ids accepted but not flushed yet). It lives in
// this instance's memory: see "Running at scale" for several instances.
type Dedup struct {
	window   uint32 // seconds
	maxShard int    // ids a shard may hold before it is emptied; 0: no bound
	seed     maphash.Seed
	shards   [64]dedupShard
}

// dedupEpoch is 2020-01-01T00:00:00Z: 32-bit seconds from it last until 2156.
const dedupEpoch = 1577836800

type dedupShard struct {
	mu sync.Mutex
	// keys[i] is a hash (0: empty slot); at[i] when it was accepted, 0 for
	// a released id (its slot stays, so probing goes on past it).
	keys []uint64
	at   []uint32
	used int // slots with a key
}

// NewDedup returns an empty filter for the given window.
func NewDedup(window time.Duration) *Dedup {
	return &Dedup{window: uint32(window / time.Second), seed: maphash.MakeSeed()}
}

func (d *Dedup) key(mcpID, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteString(mcpID)
	h.WriteByte(0)
	h.WriteString(id)
	if k := h.Sum64(); k != 0 {
		return k
	}
	return 1 // 0 marks an empty slot
}

func (d *Dedup) shard(k uint64) *dedupShard { return &d.shards[k>>58] }

// stamp turns a time into stored seconds (never 0, which means released).
func stamp(t time.Time) uint32 {
	s := t.Unix() - dedupEpoch
	switch {
	case s < 1:
		return 1
	case s > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(s)
}

// slot finds k's slot, or the empty slot where it would go.
func (s *dedupShard) slot(k uint64) int {
	mask := len(s.keys) - 1
	for i := int(k) & mask; ; i = (i + 1) & mask {
		if s.keys[i] == k || s.keys[i] == 0 {
			return i
		}
	}
}

// Reserve records (mcp, id) as accepted at now and reports true, or reports
// false when it was already accepted within the window.
func (d *Dedup) Reserve(mcpID, id string, now time.Time) bool {
	k := d.key(mcpID, id)
	s := d.shard(k)
	at := stamp(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.maxShard > 0 && s.used >= d.maxShard {
		// A bounded cache in front of a shared registry: forgetting is
		// safe (the registry answers), so the shard simply starts over.
		s.keys, s.at, s.used = nil, nil, 0
	}
	if (s.used+1)*4 > len(s.keys)*3 {
		s.resize(max(1024, len(s.keys)*2), 0)
	}
	i := s.slot(k)
	if s.keys[i] == k && s.at[i] != 0 && at-min(at, s.at[i]) < d.window {
		return false
	}
	if s.keys[i] == 0 {
		s.keys[i] = k
		s.used++
	}
	s.at[i] = at
	return true
}

// Bound makes the filter a cache of at most about maxIDs ids: a shard that
// fills up is emptied. Only for a filter in front of a shared registry,
// which still knows what the cache forgot.
func (d *Dedup) Bound(maxIDs int) {
	d.maxShard = max(1, maxIDs/len(d.shards))
}

// Release forgets a reservation whose batch could not be made durable, so
// that the client's retry is accepted.
func (d *Dedup) Release(mcpID, id string) {
	k := d.key(mcpID, id)
	s := d.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		return
	}
	if i := s.slot(k); s.keys[i] == k {
		s.at[i] = 0
	}
}

// resize rehashes into size slots, keeping the ids accepted after cutoff.
func (s *dedupShard) resize(size int, cutoff uint32) {
	keys, at := s.keys, s.at
	s.keys, s.at, s.used = make([]uint64, size), make([]uint32, size), 0
	for i, k := range keys {
		if k != 0 && at[i] > cutoff {
			j := s.slot(k)
			s.keys[j], s.at[j] = k, at[i]
			s.used++
		}
	}
}

// Sweep drops ids older than the window, shrinking tables that emptied;
// call it periodically.
func (d *Dedup) Sweep(now time.Time) (remaining int) {
	cutoff := stamp(now) - min(stamp(now), d.window)
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		if len(s.keys) > 0 {
			live := 0
			for j, k := range s.keys {
				if k != 0 && s.at[j] > cutoff {
					live++
				}
			}
			size := 1024
			for size*3 < live*4 { // at most three quarters full
				size *= 2
			}
			s.resize(size, cutoff)
		}
		remaining += s.used
		s.mu.Unlock()
	}
	return remaining
}

// Len is the number of ids remembered (released ones included until the
// next sweep).
func (d *Dedup) Len() int {
	n := 0
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		n += s.used
		s.mu.Unlock()
	}
	return n
}
