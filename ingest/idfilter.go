package ingest

import (
	"math"
	"sync"
)

// idFilter remembers, in a fixed amount of memory, the ids the duplicate
// filter's exact table let go of (docs/exactly-once.md, "Bounded memory"):
// a ring of Bloom filter segments of equal size, each covering the receipt
// times (stamps) of the ids it holds. It never forgets an id of the window
// (no false negative); it may answer "maybe" for an id it never saw, and
// the flusher then asks ClickHouse. A segment takes ids until it holds its
// capacity for a 1% false-positive rate or spans an hour; when every
// segment is in use and none is past the window, the two oldest are merged
// (bitwise OR: a union that keeps every id, at a higher false-positive
// rate), so memory never grows with the ids.
type idFilter struct {
	mu       sync.RWMutex
	window   uint32 // seconds
	words    int    // uint64 words per segment (a power of two)
	capacity int    // ids per segment for about 1% false positives
	maxSegs  int
	segs     []*filterSegment // oldest first
	spare    [][]uint64       // cleared bit arrays of dropped segments
}

type filterSegment struct {
	bits     []uint64
	n        int    // ids added (merged segments: the sum)
	from, to uint32 // stamps of the oldest and newest id added
}

// filterHashes is the number of bits set per id, all in one 512-bit
// block (one cache line: a lookup costs one memory access per segment);
// with filterBitsPerID bits an id a full segment answers a false "maybe"
// about 0.1% of the time, so a lookup across filterMaxSegments segments
// stays about 1%.
const (
	filterHashes     = 7
	filterBitsPerID  = 16
	filterMaxSegs    = 12
	filterBlockWords = 8
)

// filterSegmentSpan is the longest stretch of receipt times one segment
// covers, so that whole segments pass out of the window.
const filterSegmentSpan = 2 * 3600

// newIDFilter returns a filter of about totalBytes in segments (at least
// 4 segments of at least 64 KiB each).
func newIDFilter(window uint32, totalBytes int) *idFilter {
	segs := filterMaxSegs
	for segs > 4 && totalBytes/8/segs < 8192 {
		segs--
	}
	words := max(8192, totalBytes/8/segs) &^ (filterBlockWords - 1)
	return &idFilter{window: window, words: words, maxSegs: segs, capacity: words * 64 / filterBitsPerID}
}

// probe yields the bits of key k: a block chosen by the low half of the
// hash (by multiplication, so any number of blocks works), and filterHashes 9-bit positions in it from the remixed hash.
func (f *idFilter) probe(k uint64, fn func(word int, mask uint64) bool) bool {
	block := int(uint64(uint32(k))*uint64(f.words/filterBlockWords)>>32) * filterBlockWords
	h := (k>>32 | k<<32) * 0x9e3779b97f4a7c15
	for range filterHashes {
		b := int(h & 511)
		h >>= 9
		if !fn(block+b>>6, 1<<(b&63)) {
			return false
		}
	}
	return true
}

// add records key k received at stamp at; now is the current stamp (to
// drop the segments past the window first).
func (f *idFilter) add(k uint64, at, now uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The newest segment that can take it: ids come roughly in time order
	// (evicted oldest first), but the load at start is in any order.
	var s *filterSegment
	for i := len(f.segs) - 1; i >= 0; i-- {
		if c := f.segs[i]; c.n < f.capacity && max(c.to, at)-min(c.from, at) <= filterSegmentSpan {
			s = c
			break
		}
	}
	if s == nil {
		s = f.newSegment(now)
	}
	f.probe(k, func(w int, m uint64) bool { s.bits[w] |= m; return true })
	s.n++
	s.from, s.to = min(s.from, at), max(s.to, at)
}

// newSegment appends an empty segment, making room first: segments past
// the window go, then the two oldest are merged.
func (f *idFilter) newSegment(now uint32) *filterSegment {
	cutoff := now - min(now, f.window)
	kept := f.segs[:0]
	for _, s := range f.segs {
		if s.to <= cutoff {
			clear(s.bits)
			f.spare = append(f.spare, s.bits)
			continue
		}
		kept = append(kept, s)
	}
	clear(f.segs[len(kept):])
	f.segs = kept
	if len(f.segs) >= f.maxSegs {
		a, b := f.segs[0], f.segs[1]
		for i := range b.bits {
			b.bits[i] |= a.bits[i]
		}
		b.n += a.n
		b.from, b.to = min(a.from, b.from), max(a.to, b.to)
		clear(a.bits)
		f.spare = append(f.spare, a.bits)
		f.segs = append(f.segs[:0], f.segs[1:]...)
	}
	s := &filterSegment{from: math.MaxUint32}
	if n := len(f.spare); n > 0 {
		s.bits, f.spare = f.spare[n-1], f.spare[:n-1]
	} else {
		s.bits = make([]uint64, f.words)
	}
	f.segs = append(f.segs, s)
	return s
}

// mayContain reports whether key k may have been added with a stamp in the
// window before now.
func (f *idFilter) mayContain(k uint64, now uint32) bool {
	cutoff := now - min(now, f.window)
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i := len(f.segs) - 1; i >= 0; i-- {
		s := f.segs[i]
		if s.to <= cutoff {
			continue
		}
		if f.probe(k, func(w int, m uint64) bool { return s.bits[w]&m != 0 }) {
			return true
		}
	}
	return false
}

// stats reports the segments in use, their bytes and the ids they hold.
func (f *idFilter) stats() (segments, bytes, ids int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, s := range f.segs {
		ids += s.n
	}
	return len(f.segs), (len(f.segs) + len(f.spare)) * f.words * 8, ids
}

// expire drops the segments past the window, handing their memory back.
func (f *idFilter) expire(now uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cutoff := now - min(now, f.window)
	kept := f.segs[:0]
	for _, s := range f.segs {
		if s.to > cutoff {
			kept = append(kept, s)
		}
	}
	clear(f.segs[len(kept):])
	f.segs, f.spare = kept, nil
}
