package wire

import (
	"sync"
	"unsafe"
)

// cacheWays is how many recent values of a field are remembered.
const cacheWays = 4

// fieldCache remembers each field's recent values within a batch, and
// the slab of the batch's unique strings.
type fieldCache struct {
	recent [nFields][cacheWays]string
	next   [nFields]uint8
	slab   []byte
	floats []float64 // duration_ms of the batch's items
	ints   []int64   // response_bytes
}

// numberChunk is how many numbers of a field one allocation holds.
const numberChunk = 128

// float returns a pointer to v, kept in the batch's chunk of floats.
func (c *fieldCache) float(v float64) *float64 {
	if len(c.floats) == cap(c.floats) {
		c.floats = make([]float64, 0, numberChunk)
	}
	c.floats = append(c.floats, v)
	return &c.floats[len(c.floats)-1]
}

// integer returns a pointer to v, kept in the batch's chunk of integers.
func (c *fieldCache) integer(v int64) *int64 {
	if len(c.ints) == cap(c.ints) {
		c.ints = make([]int64, 0, numberChunk)
	}
	c.ints = append(c.ints, v)
	return &c.ints[len(c.ints)-1]
}

var fastCaches = sync.Pool{New: func() any { return new(fieldCache) }}

func putFieldCache(c *fieldCache) {
	*c = fieldCache{}
	fastCaches.Put(c)
}

// slabChunk is the size of a slab of unique strings; longer strings get
// their own allocation.
const slabChunk = 16 << 10

// shared returns s as a string, the same one as a recent value of field f
// when equal.
func (c *fieldCache) shared(f int, s []byte) string {
	for _, r := range &c.recent[f] {
		if len(r) == len(s) && r == string(s) {
			return r
		}
	}
	v := string(s)
	c.recent[f][c.next[f]%cacheWays] = v
	c.next[f]++
	return v
}

// unique returns s as a string copied into the batch's slab.
func (c *fieldCache) unique(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > slabChunk/8 {
		return string(s)
	}
	if cap(c.slab)-len(c.slab) < len(s) {
		c.slab = make([]byte, 0, slabChunk)
	}
	start := len(c.slab)
	c.slab = append(c.slab, s...)
	return unsafe.String(&c.slab[start], len(s))
}
