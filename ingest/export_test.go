package ingest

import (
	"math"
	"time"
)

// SaturateDedupFilter gives the bounded filter a segment with every bit
// set: it answers "maybe" for every id the exact table does not hold (the
// worst filter), so every such id goes through the flusher's ClickHouse
// check.
func SaturateDedupFilter(p *Pipeline) {
	f := p.c.dedup.filter
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &filterSegment{bits: make([]uint64, f.words), from: 0, to: math.MaxUint32}
	for i := range s.bits {
		s.bits[i] = math.MaxUint64
	}
	f.segs = append(f.segs, s)
}

// SetExpireEvery sets how often the shared registry's old ids are deleted
// and returns the function that restores it.
func SetExpireEvery(d time.Duration) (restore func()) {
	old := expireEvery
	expireEvery = d
	return func() { expireEvery = old }
}
