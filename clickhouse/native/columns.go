package native

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"unsafe"

	chproto "github.com/ClickHouse/ch-go/proto"
)

// LCString decodes a LowCardinality(String) column without expanding it:
// the dictionary and the per-row keys stay as sent, and At returns a
// row's string in place (ch-go's own LowCardinality column allocates a
// string per row).
type LCString struct {
	dict Str
	keys []int
	k8   chproto.ColUInt8
	k16  chproto.ColUInt16
	k32  chproto.ColUInt32
	k64  chproto.ColUInt64
}

var (
	_ chproto.ColResult    = (*LCString)(nil)
	_ chproto.StateDecoder = (*LCString)(nil)
)

func (c *LCString) Type() chproto.ColumnType { return "LowCardinality(String)" }
func (c *LCString) Rows() int                { return len(c.keys) }
func (c *LCString) Reset() {
	c.dict.Reset()
	c.keys = c.keys[:0]
}

// DecodeState reads the serialization version: shared dictionaries with
// additional keys (1), the only one servers send.
func (c *LCString) DecodeState(r *chproto.Reader) error {
	v, err := r.Int64()
	if err != nil {
		return err
	}
	if v != 1 {
		return fmt.Errorf("LowCardinality serialization version %d", v)
	}
	return nil
}

func (c *LCString) DecodeColumn(r *chproto.Reader, rows int) error {
	c.keys = c.keys[:0]
	if rows == 0 {
		return nil
	}
	meta, err := r.Int64()
	if err != nil {
		return err
	}
	const needGlobalDictionary, hasAdditionalKeys = 1 << 8, 1 << 9
	if meta&needGlobalDictionary != 0 || meta&hasAdditionalKeys == 0 {
		return fmt.Errorf("LowCardinality flags %#x", meta)
	}
	n, err := r.Int64()
	if err != nil {
		return err
	}
	if n < 0 || n > 1<<31 {
		return fmt.Errorf("LowCardinality dictionary of %d rows", n)
	}
	if err := c.dict.DecodeColumn(r, int(n)); err != nil {
		return err
	}
	if nk, err := r.Int64(); err != nil {
		return err
	} else if nk != int64(rows) {
		return fmt.Errorf("LowCardinality: %d keys for %d rows", nk, rows)
	}
	switch meta & 0xff {
	case 0:
		c.k8.Reset()
		if err := c.k8.DecodeColumn(r, rows); err != nil {
			return err
		}
		for _, k := range c.k8 {
			c.keys = append(c.keys, int(k))
		}
	case 1:
		c.k16.Reset()
		if err := c.k16.DecodeColumn(r, rows); err != nil {
			return err
		}
		for _, k := range c.k16 {
			c.keys = append(c.keys, int(k))
		}
	case 2:
		c.k32.Reset()
		if err := c.k32.DecodeColumn(r, rows); err != nil {
			return err
		}
		for _, k := range c.k32 {
			c.keys = append(c.keys, int(k))
		}
	case 3:
		c.k64.Reset()
		if err := c.k64.DecodeColumn(r, rows); err != nil {
			return err
		}
		for _, k := range c.k64 {
			c.keys = append(c.keys, int(k))
		}
	default:
		return fmt.Errorf("LowCardinality key type %d", meta&0xff)
	}
	for _, k := range c.keys {
		if k >= int(n) {
			return fmt.Errorf("LowCardinality key %d beyond a dictionary of %d", k, n)
		}
	}
	return nil
}

// At is row i's string, valid until the column decodes the next block.
func (c *LCString) At(i int) string { return strAt(&c.dict.ColStr, c.keys[i]) }

// Use makes the column read its strings from s (see Source).
func (c *LCString) Use(s *Source) { c.dict.Use(s) }

// strAt is row i of a String column in place, valid until the column
// decodes the next block (the export hands each row to its callback,
// which must not keep the strings).
func strAt(c *chproto.ColStr, i int) string {
	p := c.Pos[i]
	if p.End == p.Start {
		return ""
	}
	return unsafe.String(&c.Buf[p.Start], p.End-p.Start)
}

// Source is where String columns read their bytes: the connection's
// buffered reader itself when the query is not compressed (ch-go's
// Reader reads that very bufio.Reader then, so skipping it is exact),
// nil to go through ch-go's Reader (which decompresses). A String column
// is most of a block, and ch-go's Reader reads a length byte by byte
// through two interfaces.
type Source struct{ br *bufio.Reader }

// Attach makes s read c's stream: its buffered reader when the
// connection is not compressed, ch-go's Reader otherwise. Attach a
// Source before each query on the Conn that runs it.
func (s *Source) Attach(c *Conn) {
	s.br = nil
	if !c.compress {
		s.br = c.br
	}
}

// Str is a String column decoded from its Source when it can.
type Str struct {
	chproto.ColStr
	src *Source
}

// Use makes the column read its strings from s.
func (c *Str) Use(s *Source) { c.src = s }

// At is row i's string, valid until the column decodes the next block.
func (c *Str) At(i int) string { return strAt(&c.ColStr, i) }

func (c *Str) DecodeColumn(r *chproto.Reader, rows int) error {
	if c.src == nil || c.src.br == nil {
		return c.ColStr.DecodeColumn(r, rows)
	}
	br := c.src.br
	c.Pos = c.Pos[:0]
	buf := c.Buf[:0]
	end := 0
	for i := 0; i < rows; i++ {
		var n uint64
		for shift := uint(0); ; shift += 7 {
			b, err := br.ReadByte()
			if err != nil {
				return fmt.Errorf("string %d: %w", i, err)
			}
			if shift > 63 {
				return fmt.Errorf("string %d: length overflows", i)
			}
			n |= uint64(b&0x7f) << shift
			if b < 0x80 {
				break
			}
		}
		if n > 1<<30 {
			return fmt.Errorf("string %d: length %d", i, n)
		}
		start := end
		end += int(n)
		var err error
		if buf, err = readGrowing(br, buf, end); err != nil {
			return fmt.Errorf("string %d: %w", i, err)
		}
		c.Pos = append(c.Pos, chproto.Position{Start: start, End: end})
	}
	c.Buf = buf
	return nil
}

// readChunk is the most readGrowing adds to a buffer before the bytes
// are there: a length on the wire is a claim, and memory follows what
// was read, never a claim times the rows left.
const readChunk = 1 << 20

// readGrowing reads from br until buf holds end bytes, growing buf
// geometrically (appending) by at most readChunk beyond what was read.
func readGrowing(br io.Reader, buf []byte, end int) ([]byte, error) {
	for len(buf) < end {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(end-len(buf), readChunk))
		}
		to := min(end, cap(buf))
		if _, err := io.ReadFull(br, buf[len(buf):to]); err != nil {
			return buf, err
		}
		buf = buf[:to]
	}
	return buf, nil
}

// ArrStr is an Array(String) column: offsets and the elements.
type ArrStr struct {
	offsets chproto.ColUInt64
	data    Str
}

// Use makes the column read its strings from s.
func (c *ArrStr) Use(s *Source) { c.data.Use(s) }

// End is the index, among all the elements of the block, just past row
// i's last element (row i's elements start at End(i-1), or 0).
func (c *ArrStr) End(i int) uint64 { return c.offsets[i] }

// Elem is element j among all the elements of the block, valid until the
// column decodes the next block.
func (c *ArrStr) Elem(j int) string { return strAt(&c.data.ColStr, j) }

var _ chproto.ColResult = (*ArrStr)(nil)

func (c *ArrStr) Type() chproto.ColumnType { return "Array(String)" }
func (c *ArrStr) Rows() int                { return len(c.offsets) }
func (c *ArrStr) Reset() {
	c.offsets.Reset()
	c.data.Reset()
}

func (c *ArrStr) DecodeColumn(r *chproto.Reader, rows int) error {
	c.offsets.Reset()
	if err := c.offsets.DecodeColumn(r, rows); err != nil {
		return err
	}
	n := 0
	if rows > 0 {
		n = int(c.offsets[rows-1])
	}
	if n < 0 || n > 1<<31 {
		return fmt.Errorf("array of %d elements", n)
	}
	return c.data.DecodeColumn(r, n)
}
