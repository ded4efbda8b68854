package native

import (
	"math"

	chproto "github.com/ClickHouse/ch-go/proto"
)

// LCInput is a LowCardinality(String) column to insert. It builds its
// dictionary as rows are appended, a row equal to the one before without
// a lookup; ch-go's own column hashes every row again when the block is
// encoded, and allocates the keys then (docs/benchmarks.md, "Ingest"). It
// encodes as ch-go's does: one dictionary of the block's distinct values
// sent with it, keys of the narrowest width.
type LCInput struct {
	dict  chproto.ColStr
	index map[string]uint32
	keys  []uint32
	k8    chproto.ColUInt8
	k16   chproto.ColUInt16
	k32   chproto.ColUInt32
}

var (
	_ chproto.ColInput     = (*LCInput)(nil)
	_ chproto.StateEncoder = (*LCInput)(nil)
)

// Append adds a row. The column keeps v as a key of its index until Reset.
func (c *LCInput) Append(v string) {
	if n := len(c.keys); n > 0 && strAt(&c.dict, int(c.keys[n-1])) == v {
		c.keys = append(c.keys, c.keys[n-1])
		return
	}
	k, ok := c.index[v]
	if !ok {
		if c.index == nil {
			c.index = map[string]uint32{}
		}
		k = uint32(c.dict.Rows())
		c.dict.Append(v)
		c.index[v] = k
	}
	c.keys = append(c.keys, k)
}

// Row is row i's value (the ClickHouse 26 proof reads rows back so).
func (c *LCInput) Row(i int) string { return strAt(&c.dict, int(c.keys[i])) }

func (c *LCInput) Type() chproto.ColumnType { return "LowCardinality(String)" }
func (c *LCInput) Rows() int                { return len(c.keys) }

// Reset empties the column, dropping the strings its index refers to.
func (c *LCInput) Reset() {
	c.dict.Reset()
	clear(c.index)
	c.keys = c.keys[:0]
}

// EncodeState writes the key serialization version: shared dictionaries
// with additional keys (1), the only one.
func (c *LCInput) EncodeState(b *chproto.Buffer) { b.PutInt64(1) }

func (c *LCInput) EncodeColumn(b *chproto.Buffer) {
	if len(c.keys) == 0 {
		return
	}
	const hasAdditionalKeys, needUpdateDictionary = 1 << 9, 1 << 10
	n := c.dict.Rows()
	var width int64 // 0: UInt8 keys, 1: UInt16, 2: UInt32
	switch {
	case n <= math.MaxUint8+1:
		width = 0
	case n <= math.MaxUint16+1:
		width = 1
	default:
		width = 2
	}
	b.PutInt64(hasAdditionalKeys | needUpdateDictionary | width)
	b.PutInt64(int64(n))
	c.dict.EncodeColumn(b)
	b.PutInt64(int64(len(c.keys)))
	switch width {
	case 0:
		c.k8 = c.k8[:0]
		for _, k := range c.keys {
			c.k8 = append(c.k8, uint8(k))
		}
		c.k8.EncodeColumn(b)
	case 1:
		c.k16 = c.k16[:0]
		for _, k := range c.keys {
			c.k16 = append(c.k16, uint16(k))
		}
		c.k16.EncodeColumn(b)
	default:
		c.k32 = append(c.k32[:0], c.keys...)
		c.k32.EncodeColumn(b)
	}
}

// WriteColumn is EncodeColumn for ch-go's Writer (not used by Insert).
func (c *LCInput) WriteColumn(w *chproto.Writer) { w.ChainBuffer(c.EncodeColumn) }
