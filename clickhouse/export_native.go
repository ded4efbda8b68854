package clickhouse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/ClickHouse/ch-go/compress"
	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// The export reads its rows over a native-protocol connection of its own
// instead of the driver's pool: the driver hands rows one at a time
// through Scan (reflection for the arrays, a string allocated per cell),
// which capped the export at about a third of its goal. This connection
// decodes each block into reused columns (ch-go's proto columns, the
// decoders under the driver) and the export reads the cells in place.
//
// The wire is pinned to protocol revision 54412 (ClickHouse 18.16's), which
// every later server still speaks: handshake and query packets are encoded
// by the driver's own protocol package (which knows the client-info layout
// of old revisions), blocks are decoded by ch-go's. A server of any version
// sends the export's blocks in the same form then (LowCardinality columns
// as such, no custom serialization, no profile-event packets).
const exportRevision = 54412

// exportConn is one native-protocol connection running one query.
type exportConn struct {
	conn     net.Conn
	br       *bufio.Reader // under r, which uses it as is (big enough)
	r        *chproto.Reader
	revision int
	compress bool
}

// dialExport connects and says hello. Compression (LZ4, as the driver's
// pool uses) is off on a loopback address, where it costs more CPU than
// the bytes it saves.
func (db *DB) dialExport(ctx context.Context) (*exportConn, error) {
	var (
		nc   net.Conn
		err  error
		addr string
	)
	timeout := db.cfg.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	for _, addr = range db.cfg.Addr {
		if nc, err = d.DialContext(ctx, "tcp", addr); err == nil {
			break
		}
	}
	if nc == nil {
		if err == nil {
			err = errors.New("no address")
		}
		return nil, err
	}
	hello := false
	defer func() {
		if !hello {
			nc.Close()
		}
	}()
	c := &exportConn{conn: nc, br: bufio.NewReaderSize(nc, 256<<10), compress: !isLoopback(nc.RemoteAddr())}
	if db.exportCompress != 0 {
		c.compress = db.exportCompress > 0
	}
	c.r = chproto.NewReader(c.br)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	} else {
		_ = nc.SetDeadline(time.Now().Add(timeout))
	}
	var b chproto.Buffer
	b.PutByte(proto.ClientHello)
	proto.ClientHandshake{ProtocolVersion: exportRevision, ClientName: "telemetry-export",
		ClientVersion: proto.Version{Major: 1}}.Encode(&b)
	b.PutString("default")
	user := db.cfg.Username
	if user == "" {
		user = "default" // as the driver does
	}
	b.PutString(user)
	b.PutString(db.cfg.Password)
	if _, err := nc.Write(b.Buf); err != nil {
		return nil, err
	}
	code, err := c.r.UInt8()
	if err != nil {
		return nil, err
	}
	switch code {
	case proto.ServerHello:
		var srv proto.ServerHandshake
		if err := srv.Decode(c.r); err != nil {
			return nil, err
		}
		c.revision = int(min(srv.Revision, exportRevision))
	case proto.ServerException:
		return nil, c.exception()
	default:
		return nil, fmt.Errorf("handshake: unexpected packet %d", code)
	}
	_ = nc.SetDeadline(time.Time{})
	hello = true
	return c, nil
}

func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

func (c *exportConn) exception() error {
	var ex proto.Exception
	if err := ex.Decode(c.r); err != nil {
		return err
	}
	return &ex
}

// query runs body, decoding each data block into result and calling
// onBlock with its row count. The columns are reused by the next block.
// When ctx ends the query is cancelled on the server and the connection
// closed; query returns ctx's error then.
func (c *exportConn) query(ctx context.Context, id, body string, result chproto.Results, onBlock func(rows int) error) (err error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			var b chproto.Buffer
			b.PutByte(proto.ClientCancel)
			_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.conn.Write(b.Buf)
			_ = c.conn.Close()
		case <-stop:
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
	}()

	var b chproto.Buffer
	b.PutByte(proto.ClientQuery)
	q := proto.Query{ClientTCPProtocolVersion: exportRevision, ClientName: "telemetry-export",
		ClientVersion: proto.Version{Major: 1}, ID: id, Body: body, Compression: c.compress,
		InitialAddress: c.conn.LocalAddr().String()}
	if err := q.Encode(&b, uint64(c.revision)); err != nil {
		return err
	}
	// The empty block that ends the (absent) external tables.
	b.PutByte(proto.ClientData)
	b.PutString("")
	start := len(b.Buf)
	if err := proto.NewBlock().Encode(&b, uint64(c.revision)); err != nil {
		return err
	}
	if c.compress {
		w := compress.NewWriter(compress.LevelZero, compress.LZ4)
		if err := w.Compress(b.Buf[start:]); err != nil {
			return err
		}
		b.Buf = append(b.Buf[:start], w.Data...)
	}
	if _, err := c.conn.Write(b.Buf); err != nil {
		return err
	}

	for {
		code, err := c.r.UInt8()
		if err != nil {
			return err
		}
		switch code {
		case proto.ServerData: // the query has no totals nor extremes
			if _, err := c.r.Str(); err != nil { // the temporary table's name
				return err
			}
			if c.compress {
				c.r.EnableCompression()
			}
			var block chproto.Block
			err := block.DecodeBlock(c.r, c.revision, result)
			c.r.DisableCompression()
			if err != nil {
				return fmt.Errorf("decode block: %w", err)
			}
			if block.Rows > 0 {
				if err := onBlock(block.Rows); err != nil {
					return err
				}
			}
		case proto.ServerException:
			return c.exception()
		case proto.ServerProgress:
			var p proto.Progress
			if err := p.Decode(c.r, uint64(c.revision)); err != nil {
				return err
			}
		case proto.ServerProfileInfo:
			var p proto.ProfileInfo
			if err := p.Decode(c.r, uint64(c.revision)); err != nil {
				return err
			}
		case proto.ServerEndOfStream:
			return nil
		default:
			return fmt.Errorf("unexpected packet %d", code)
		}
	}
}

func (c *exportConn) close() { _ = c.conn.Close() }

// colLCString decodes a LowCardinality(String) column without expanding
// it: the dictionary and the per-row keys stay as sent, and at returns a
// row's string in place (ch-go's own LowCardinality column allocates a
// string per row).
type colLCString struct {
	dict colStr
	keys []int
	k8   chproto.ColUInt8
	k16  chproto.ColUInt16
	k32  chproto.ColUInt32
	k64  chproto.ColUInt64
}

var (
	_ chproto.ColResult    = (*colLCString)(nil)
	_ chproto.StateDecoder = (*colLCString)(nil)
)

func (c *colLCString) Type() chproto.ColumnType { return "LowCardinality(String)" }
func (c *colLCString) Rows() int                { return len(c.keys) }
func (c *colLCString) Reset() {
	c.dict.Reset()
	c.keys = c.keys[:0]
}

// DecodeState reads the serialization version: shared dictionaries with
// additional keys (1), the only one servers send.
func (c *colLCString) DecodeState(r *chproto.Reader) error {
	v, err := r.Int64()
	if err != nil {
		return err
	}
	if v != 1 {
		return fmt.Errorf("LowCardinality serialization version %d", v)
	}
	return nil
}

func (c *colLCString) DecodeColumn(r *chproto.Reader, rows int) error {
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

// at is row i's string, valid until the column decodes the next block.
func (c *colLCString) at(i int) string { return strAt(&c.dict.ColStr, c.keys[i]) }

// strAt is row i of a String column in place, valid until the column
// decodes the next block (the export hands each row to its callback, which
// must not keep the strings).
func strAt(c *chproto.ColStr, i int) string {
	p := c.Pos[i]
	if p.End == p.Start {
		return ""
	}
	return unsafe.String(&c.Buf[p.Start], p.End-p.Start)
}

// strSource is where the export's String columns read their bytes: the
// connection's buffered reader itself when the query is not compressed
// (ch-go's Reader reads that very bufio.Reader then, so skipping it is
// exact), nil to go through ch-go's Reader (which decompresses). A
// String column is most of a block, and ch-go's Reader reads a length
// byte by byte through two interfaces.
type strSource struct{ br *bufio.Reader }

// colStr is a String column decoded from src when it can.
type colStr struct {
	chproto.ColStr
	src *strSource
}

func (c *colStr) DecodeColumn(r *chproto.Reader, rows int) error {
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

// colArrStr is an Array(String) column: offsets and the elements.
type colArrStr struct {
	offsets chproto.ColUInt64
	data    colStr
}

var _ chproto.ColResult = (*colArrStr)(nil)

func (c *colArrStr) Type() chproto.ColumnType { return "Array(String)" }
func (c *colArrStr) Rows() int                { return len(c.offsets) }
func (c *colArrStr) Reset() {
	c.offsets.Reset()
	c.data.Reset()
}

func (c *colArrStr) DecodeColumn(r *chproto.Reader, rows int) error {
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
