// Package native reads a query's blocks over a native-protocol connection
// of its own, into reused columns whose cells are read in place: the
// export's reader (clickhouse/export.go). The driver's pool hands rows one
// at a time through Scan (reflection for the arrays, a string allocated
// per cell), which capped the export at about a third of its goal. A Conn
// decodes each block into reused columns (ch-go's proto columns, the
// decoders under the driver, and the Str, LCString and ArrStr of this
// package, which keep their strings as sent). Conn.Insert sends the
// inserts of clickhouse.Sink the same way, a block of ch-go columns
// (insert.go).
package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ClickHouse/ch-go/compress"
	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// Revision is the protocol revision a Conn speaks: 54412, ClickHouse
// 18.16's, which every later server still speaks. Handshake and query
// packets are encoded by the driver's own protocol package (which knows
// the client-info layout of old revisions), blocks are decoded by
// ch-go's. A server of any version sends the export's blocks in the same
// form then (LowCardinality columns as such, no custom serialization, no
// profile-event packets).
const Revision = 54412

// Options say where and how to connect.
type Options struct {
	// Addrs are tried in turn until one answers.
	Addrs []string
	// DialTimeout bounds the connection and the handshake (5 s if 0).
	DialTimeout        time.Duration
	Username, Password string
	// Compress chooses LZ4 compression: 0 by address (off on a
	// loopback address, where it costs more CPU than the bytes it
	// saves), 1 on, -1 off.
	Compress int
	// ClientName is what the server's query log names the client
	// ("telemetry-export" if empty).
	ClientName string
}

// Conn is one native-protocol connection running one query.
type Conn struct {
	conn     net.Conn
	br       *bufio.Reader // under r, which uses it as is (big enough)
	r        *chproto.Reader
	revision int
	compress bool
	client   string
	zw       *compress.Writer // compressFrom's, made on first use
	buf      chproto.Buffer   // Insert's, kept for the next one
}

// Dial connects and says hello. Compression (LZ4, as the driver's pool
// uses) is off on a loopback address unless o.Compress says otherwise.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	var (
		nc   net.Conn
		err  error
		addr string
	)
	timeout := o.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	for _, addr = range o.Addrs {
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
	c := &Conn{conn: nc, br: bufio.NewReaderSize(nc, 256<<10), compress: !isLoopback(nc.RemoteAddr()), client: o.ClientName}
	if c.client == "" {
		c.client = "telemetry-export"
	}
	if o.Compress != 0 {
		c.compress = o.Compress > 0
	}
	c.r = chproto.NewReader(c.br)
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	} else {
		_ = nc.SetDeadline(time.Now().Add(timeout))
	}
	var b chproto.Buffer
	b.PutByte(proto.ClientHello)
	proto.ClientHandshake{ProtocolVersion: Revision, ClientName: c.client,
		ClientVersion: proto.Version{Major: 1}}.Encode(&b)
	b.PutString("default")
	user := o.Username
	if user == "" {
		user = "default" // as the driver does
	}
	b.PutString(user)
	b.PutString(o.Password)
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
		c.revision = int(min(srv.Revision, Revision))
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

func (c *Conn) exception() error {
	var ex proto.Exception
	if err := ex.Decode(c.r); err != nil {
		return err
	}
	return &ex
}

// Query runs body under the query id id with settings, decoding each
// data block into result and calling onBlock with its row count. The
// columns are reused by the next block. When ctx ends the query is
// cancelled on the server and the connection closed; Query returns ctx's
// error then. The connection may run another query once this one
// succeeded.
func (c *Conn) Query(ctx context.Context, id, body string, settings proto.Settings, result chproto.Results, onBlock func(rows int) error) (err error) {
	stop := c.watch(ctx)
	defer func() {
		stop()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
	}()
	if err := c.send(c.query(id, body, settings)); err != nil {
		return fmt.Errorf("%w: %w", ErrBeforeData, err)
	}
	return c.untilEnd(func() error { return c.readData(result, onBlock) })
}

// readData decodes a data packet's block into result and calls onBlock
// with its row count when it has rows.
func (c *Conn) readData(result chproto.Results, onBlock func(rows int) error) error {
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
		return onBlock(block.Rows)
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() { _ = c.conn.Close() }
