package native

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ClickHouse/ch-go/compress"
	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// readTimeout bounds an insert without a deadline of its own: the
// driver's default read timeout (5 minutes).
const readTimeout = 5 * time.Minute

// ErrBeforeData wraps an error of an insert that failed before its block
// was sent (the query, or the header the server answers it with): the
// server stored nothing of it, so it may be sent again on another
// connection. A pooled connection the server closed while idle fails so.
var ErrBeforeData = errors.New("before the block was sent")

// Insert runs body (INSERT INTO t (columns) VALUES) under the query id id
// (the server's own if empty) with settings, sending input, whose columns
// have rows rows, as one block. The server's header must name the same
// columns with the same types, or nothing is sent. When ctx ends the
// query is cancelled and the connection closed, as the driver does;
// Insert returns ctx's error then. The connection may run another insert
// once this one succeeded.
func (c *Conn) Insert(ctx context.Context, id, body string, settings proto.Settings, input chproto.Input, rows int) (err error) {
	stop := c.watch(ctx)
	defer func() {
		stop()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
	} else {
		_ = c.conn.SetDeadline(time.Now().Add(readTimeout))
	}
	defer func() { _ = c.conn.SetDeadline(time.Time{}) }()

	if err := c.send(c.query(id, body, settings)); err != nil {
		return fmt.Errorf("%w: %w", ErrBeforeData, err)
	}
	if err := c.header(input); err != nil {
		return err
	}
	b := &c.buf
	b.Reset()
	defer func() {
		if cap(b.Buf) > maxKeptBuffer {
			b.Buf = nil
		}
	}()
	b.PutByte(proto.ClientData)
	b.PutString("")
	start := len(b.Buf)
	block := chproto.Block{Info: chproto.BlockInfo{BucketNum: -1}, Columns: len(input), Rows: rows}
	if err := block.EncodeBlock(b, c.revision, input); err != nil {
		return err
	}
	if err := c.compressFrom(b, start); err != nil {
		return err
	}
	b.Buf = append(b.Buf, c.emptyBlock()...)
	if err := c.send(b.Buf); err != nil {
		return err
	}
	return c.untilEnd(nil)
}

// maxKeptBuffer bounds the encoding buffer a connection keeps for its
// next insert.
const maxKeptBuffer = 64 << 20

// watch cancels the query on the server and closes the connection when
// ctx ends before the returned stop is called.
func (c *Conn) watch(ctx context.Context) (stop func()) {
	done := make(chan struct{})
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
		case <-done:
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// query encodes the query packet and the empty block that ends the
// (absent) external tables.
func (c *Conn) query(id, body string, settings proto.Settings) []byte {
	var b chproto.Buffer
	b.PutByte(proto.ClientQuery)
	q := proto.Query{ClientTCPProtocolVersion: Revision, ClientName: c.client,
		ClientVersion: proto.Version{Major: 1}, ID: id, Body: body, Compression: c.compress,
		InitialAddress: c.conn.LocalAddr().String(), Settings: settings}
	if err := q.Encode(&b, uint64(c.revision)); err != nil {
		// Only a setting of another type than int or bool fails, a bug.
		panic(err)
	}
	return append(b.Buf, c.emptyBlock()...)
}

// emptyBlock is a data packet with an empty block (compressed when the
// connection compresses).
func (c *Conn) emptyBlock() []byte {
	var b chproto.Buffer
	b.PutByte(proto.ClientData)
	b.PutString("")
	start := len(b.Buf)
	_ = proto.NewBlock().Encode(&b, uint64(c.revision))
	if err := c.compressFrom(&b, start); err != nil {
		panic(err) // LZ4 of a few bytes
	}
	return b.Buf
}

// compressFrom compresses b from start on, when the connection compresses.
func (c *Conn) compressFrom(b *chproto.Buffer, start int) error {
	if !c.compress {
		return nil
	}
	if c.zw == nil {
		c.zw = compress.NewWriter(compress.LevelZero, compress.LZ4)
	}
	if err := c.zw.Compress(b.Buf[start:]); err != nil {
		return err
	}
	b.Buf = append(b.Buf[:start], c.zw.Data...)
	return nil
}

func (c *Conn) send(p []byte) error {
	_, err := c.conn.Write(p)
	return err
}

// header reads the server's answer to an insert query up to the block
// that names the table's columns, and checks it against input. A failure
// to read it (not an exception) is ErrBeforeData.
func (c *Conn) header(input chproto.Input) error {
	for {
		code, err := c.r.UInt8()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBeforeData, err)
		}
		switch code {
		case proto.ServerData:
			if _, err := c.r.Str(); err != nil {
				return fmt.Errorf("%w: %w", ErrBeforeData, err)
			}
			if c.compress {
				c.r.EnableCompression()
			}
			cols, err := c.readHeader()
			c.r.DisableCompression()
			if err != nil {
				return fmt.Errorf("%w: insert header: %w", ErrBeforeData, err)
			}
			return checkHeader(cols, input)
		case proto.ServerException:
			return c.exception()
		case proto.ServerProgress:
			var p proto.Progress
			if err := p.Decode(c.r, uint64(c.revision)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected packet %d", code)
		}
		if err != nil {
			return err
		}
	}
}

// readHeader decodes the header block of an insert: the columns' names
// and types, no rows.
func (c *Conn) readHeader() ([][2]string, error) {
	var info chproto.BlockInfo
	if err := info.Decode(c.r); err != nil {
		return nil, err
	}
	n, err := c.r.Int()
	if err != nil {
		return nil, err
	}
	rows, err := c.r.Int()
	if err != nil {
		return nil, err
	}
	if rows != 0 || n > 1000 {
		return nil, fmt.Errorf("a header of %d columns and %d rows", n, rows)
	}
	cols := make([][2]string, n)
	for i := range cols {
		for j := range cols[i] {
			if cols[i][j], err = c.r.Str(); err != nil {
				return nil, err
			}
		}
	}
	return cols, nil
}

// checkHeader compares the server's columns (name, type) with the
// block's: same names, same order, same types.
func checkHeader(cols [][2]string, input chproto.Input) error {
	if len(cols) != len(input) {
		return fmt.Errorf("insert: the server expects %d columns, the block has %d", len(cols), len(input))
	}
	for i, col := range cols {
		if col[0] != input[i].Name || col[1] != string(input[i].Data.Type()) {
			return fmt.Errorf("insert: column %d is %s %s on the server, %s %s in the block",
				i, col[0], col[1], input[i].Name, input[i].Data.Type())
		}
	}
	return nil
}

// untilEnd reads the server's packets up to the end of the query, calling
// onData on each data packet (one is unexpected if onData is nil).
func (c *Conn) untilEnd(onData func() error) error {
	for {
		code, err := c.r.UInt8()
		if err != nil {
			return err
		}
		switch {
		case code == proto.ServerData && onData != nil: // no totals nor extremes
			err = onData()
		case code == proto.ServerException:
			return c.exception()
		case code == proto.ServerProgress:
			var p proto.Progress
			err = p.Decode(c.r, uint64(c.revision))
		case code == proto.ServerProfileInfo:
			var p proto.ProfileInfo
			err = p.Decode(c.r, uint64(c.revision))
		case code == proto.ServerEndOfStream:
			return nil
		default:
			return fmt.Errorf("unexpected packet %d", code)
		}
		if err != nil {
			return err
		}
	}
}
