package ingest

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Dedup remembers which item ids each MCP had accepted in the last window
// (24 h by contract), so that a retried batch never double counts. It keeps a
// 64-bit hash of (mcp, id) and the acceptance time in seconds since 2020 in
// an open-addressing table of two flat arrays: 12 bytes a slot, about 20 an
// id, nothing for the garbage collector to scan. A false positive needs a
// 64-bit collision within one window (negligible).
//
// With Limit, its memory does not grow with the ids (docs/exactly-once.md,
// "Bounded memory"): the table keeps the most recent ids exactly, up to a
// number, and hands the older ones, stored in ClickHouse or not, to a
// fixed-size filter (idFilter). An id the filter may hold is accepted as
// unverified (Admit), which its log record carries, and the flusher
// checks it before storing it: the flusher stores the log's records in
// order, so an earlier copy is in ClickHouse by then or in the same
// batch. No false drop, no double.
//
// It is rebuilt on start from ClickHouse (ids received in the window) and
// from the write-ahead log (ids accepted but not flushed yet). It lives in
// this instance's memory: see "Running at scale" for several instances.
type Dedup struct {
	window   uint32 // seconds
	maxShard int    // ids a shard may hold before it is emptied; 0: no bound
	// maxExact: ids a shard keeps exactly before it hands its oldest
	// half to filter (Limit); 0: no bound.
	maxExact   int
	filter     *idFilter
	unverified atomic.Int64 // ids accepted while the filter said maybe
	seed       maphash.Seed
	shards     [64]dedupShard
}

// Reservation flags.
const (
	flagStored = 1 << iota // loaded from ClickHouse at start: certainly no maybe
)

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

func (d *Dedup) shard(k uint64) *dedupShard { return &d.shards[shardOf(k)] }

// shardOf is the index of key k's shard: its top six bits.
func shardOf(k uint64) int { return int(k >> 58) }

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
	ok, _ := d.reserve(d.key(mcpID, id), stamp(now), 0)
	return ok
}

// Admit is Reserve that also reports, with Limit, whether the id was
// accepted unverified: the filter may hold it, so the flusher must check
// it before storing it.
func (d *Dedup) Admit(mcpID, id string, now time.Time) (accepted, unverified bool) {
	return d.reserve(d.key(mcpID, id), stamp(now), 0)
}

// reserveStored records an id that ClickHouse stores, received at at (the
// load at start).
func (d *Dedup) reserveStored(mcpID, id string, at time.Time) {
	d.reserve(d.key(mcpID, id), stamp(at), flagStored)
}

func (d *Dedup) reserve(k uint64, at uint32, flags uint8) (accepted, unverified bool) {
	s := d.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.reserveLocked(s, k, at, flags)
}

// AdmitAll is Admit of each of ids of one MCP in turn, locking each shard
// once for the ids it holds rather than once an id: accepted[i] and
// unverified[i] answer for ids[i] (the slices must be as long as ids).
// Within a shard the ids go in their order, so a payload that repeats an
// id accepts its first copy, as with Admit. Only a false "maybe" of the
// filter may differ, since other shards' evictions reach the filter in
// another order; a true one (the id itself was evicted) cannot.
func (d *Dedup) AdmitAll(mcpID string, ids []string, now time.Time, accepted, unverified []bool) {
	sc := admitScratch.Get().(*admitOrder)
	defer admitScratch.Put(sc)
	keys, order := sc.keys[:0], sc.order[:0]
	var first [len(d.shards) + 1]int32 // ids of shard j start at order[first[j]]
	for _, id := range ids {
		k := d.key(mcpID, id)
		keys = append(keys, k)
		first[shardOf(k)+1]++
	}
	for j := 1; j < len(first); j++ {
		first[j] += first[j-1]
	}
	if cap(order) < len(ids) {
		order = make([]int32, len(ids))
	}
	order = order[:len(ids)]
	next := first
	for i, k := range keys {
		order[next[shardOf(k)]] = int32(i)
		next[shardOf(k)]++
	}
	at := stamp(now)
	for j := range d.shards {
		if first[j] == first[j+1] {
			continue
		}
		s := &d.shards[j]
		s.mu.Lock()
		for _, i := range order[first[j]:first[j+1]] {
			accepted[i], unverified[i] = d.reserveLocked(s, keys[i], at, 0)
		}
		s.mu.Unlock()
	}
	sc.keys, sc.order = keys, order
}

// admitOrder is AdmitAll's scratch: the ids' keys and their order by shard.
type admitOrder struct {
	keys  []uint64
	order []int32
}

var admitScratch = sync.Pool{New: func() any { return new(admitOrder) }}

// reserveLocked is reserve with s, k's shard, locked.
func (d *Dedup) reserveLocked(s *dedupShard, k uint64, at uint32, flags uint8) (accepted, unverified bool) {
	if d.maxShard > 0 && s.used >= d.maxShard {
		// A bounded cache in front of a shared registry: forgetting is
		// safe (the registry answers), so the shard simply starts over.
		s.keys, s.at, s.used = nil, nil, 0
	}
	if d.maxExact > 0 && s.used >= d.maxExact {
		d.evict(s, at)
	}
	if (s.used+1)*4 > len(s.keys)*3 {
		s.rebuild(max(1024, len(s.keys)*2), nil)
	}
	i := s.slot(k)
	if s.keys[i] == k && s.at[i] != 0 && at-min(at, s.at[i]) < d.window {
		return false, false
	}
	if flags&flagStored == 0 && d.filter != nil && d.filter.mayContain(k, at) {
		unverified = true
		d.unverified.Add(1)
	}
	if s.keys[i] == 0 {
		s.keys[i] = k
		s.used++
	}
	s.at[i] = at
	return true, unverified
}

// Limit bounds the memory of a filter that is the authority on
// duplicates (no shared registry): about exactIDs ids are kept exactly,
// and the older ones go to a filter of about filterBytes, whether
// ClickHouse stores them yet or not, so memory does not grow with the
// flush backlog. Only unverified ids stay until the flusher checked them.
// Call before use.
func (d *Dedup) Limit(exactIDs, filterBytes int) {
	d.maxExact = max(16, exactIDs/len(d.shards))
	d.filter = newIDFilter(d.window, filterBytes)
}

// evict hands the older half of the shard's ids to the filter, whether
// ClickHouse stores them yet or not, and drops those past the window.
func (d *Dedup) evict(s *dedupShard, now uint32) {
	cutoff := now - min(now, d.window)
	live := make([]uint32, 0, s.used)
	for i, k := range s.keys {
		if k != 0 && s.at[i] > cutoff {
			live = append(live, s.at[i])
		}
	}
	var limit uint32 // ids received at or before it go
	if len(live) > 0 {
		slices.Sort(live)
		limit = live[max(1, len(live)/2)-1]
	}
	size := 1024 // room for the bound, at most three quarters full
	for size*3 < d.maxExact*4 {
		size *= 2
	}
	s.rebuild(size, func(k uint64, at uint32) bool {
		if at <= cutoff {
			return false
		}
		if at <= limit {
			d.filter.add(k, at, now)
			return false
		}
		return true
	})
}

// Key is the filter's hash of an MCP's item id (for the flusher).
func (d *Dedup) Key(mcpID, id string) uint64 { return d.key(mcpID, id) }

// Duplicate forgets the acceptance of an unverified id that ClickHouse
// showed to be a duplicate (its item is left out): the id's window runs
// from its first receipt, which the filter or ClickHouse still knows.
func (d *Dedup) Duplicate(k uint64) { d.release(k) }

func (d *Dedup) release(k uint64) {
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

// Bound makes the filter a cache of at most about maxIDs ids: a shard that
// fills up is emptied. Only for a filter in front of a shared registry,
// which still knows what the cache forgot.
func (d *Dedup) Bound(maxIDs int) {
	d.maxShard = max(1, maxIDs/len(d.shards))
}

// Release forgets a reservation whose batch could not be made durable, so
// that the client's retry is accepted.
func (d *Dedup) Release(mcpID, id string) { d.release(d.key(mcpID, id)) }

// rebuild rehashes into size slots, keeping the entries keep accepts (all
// of them when keep is nil).
func (s *dedupShard) rebuild(size int, keep func(k uint64, at uint32) bool) {
	keys, at := s.keys, s.at
	s.keys, s.at, s.used = make([]uint64, size), make([]uint32, size), 0
	for i, k := range keys {
		if k != 0 && (keep == nil || keep(k, at[i])) {
			j := s.slot(k)
			s.keys[j], s.at[j] = k, at[i]
			s.used++
		}
	}
}

// resize rehashes into size slots, keeping the ids accepted after cutoff.
func (s *dedupShard) resize(size int, cutoff uint32) {
	s.rebuild(size, func(_ uint64, at uint32) bool { return at > cutoff })
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
	if d.filter != nil {
		d.filter.expire(stamp(now))
	}
	return remaining
}

// DedupStats describe the duplicate filter's memory.
type DedupStats struct {
	ExactIDs       int   // ids in the exact table (released ones until the next sweep)
	ExactBytes     int   // the exact table's arrays
	FilterSegments int   // filter segments in use (Limit)
	FilterIDs      int   // ids handed to them
	FilterBytes    int   // their bit arrays, spare ones included
	Unverified     int64 // ids accepted while the filter said maybe, since start
}

// Stats reports the filter's size.
func (d *Dedup) Stats() DedupStats {
	var st DedupStats
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		st.ExactIDs += s.used
		st.ExactBytes += len(s.keys) * 12
		s.mu.Unlock()
	}
	if d.filter != nil {
		st.FilterSegments, st.FilterBytes, st.FilterIDs = d.filter.stats()
	}
	st.Unverified = d.unverified.Load()
	return st
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
