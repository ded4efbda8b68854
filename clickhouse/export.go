package clickhouse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse/native"
)

var _ analytics.Exporter = (*Reads)(nil)

// exportChunkRows bounds the rows one export query sorts: an export of a
// long range is one query per run of consecutive days holding at most
// this many items (or one day, however big), so the server sorts a day or
// a few, never the whole range (18.16 cannot read a MergeTree in its
// order, so ORDER BY sorts everything the query reads). 18.16's sort is
// slower per row the more rows it merges: BenchmarkExport streamed about
// 1.5 M rows/s in chunks of 250,000 and 0.85 M in chunks of a million
// (100,000 was no faster: more queries).
const exportChunkRows = 250_000

// Export implements analytics.Exporter from the raw table. The days to
// read come from mcp_daily (a few rollup rows), grouped into chunks of at
// most exportChunkRows items; each chunk is one query sorted by (ts, ts_ms,
// id, session_id), read block by block (about 65,000 rows each) over a
// native connection of its own (package native) into reused columns, so
// memory stays flat and a row costs no allocation. Export queries carry
// the query id prefix "export-" and no max_execution_time: they last as
// long as the client reads, and a cancelled ctx cancels the query on the
// server.
//
// The next chunk's query is sent while the current one streams (on a
// second connection), so the server sorts it meanwhile instead of the
// client waiting for the sort between chunks; it blocks on sending once
// the socket's buffers are full, so memory stays bounded.
func (db *Reads) Export(ctx context.Context, mcpID string, r analytics.Range, each func(*analytics.ExportedItem) error) error {
	chunks, err := db.exportChunks(ctx, mcpID, r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // no query outlives Export, even when each panics
	}()
	cols := [2]*exportCols{newExportCols(), newExportCols()}
	it := &analytics.ExportedItem{}
	var next *exportStream
	if len(chunks) > 0 {
		next = db.startExport(ctx, &wg, mcpID, chunks[0], cols[0])
	}
	for i := range chunks {
		s := next
		next = nil
		if i+1 < len(chunks) {
			next = db.startExport(ctx, &wg, mcpID, chunks[i+1], cols[(i+1)%2])
		}
		for rows := range s.blocks {
			if err := s.cols.each(rows, it, each); err != nil {
				cancel()
				return err
			}
			// The producer gives up on ctx too: handing over without
			// watching it would wait forever for a reader that is gone.
			select {
			case s.ack <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if s.err != nil {
			cancel()
			return wrapErr("export", s.err)
		}
	}
	return nil
}

// exportStream is a chunk's query running in the background: it sends the
// row count of each block decoded into cols on blocks and waits on ack
// before decoding the next; err is set when blocks is closed.
type exportStream struct {
	cols   *exportCols
	blocks chan int
	ack    chan struct{}
	err    error
}

// startExport sends the query of one chunk in the background.
func (db *Reads) startExport(ctx context.Context, wg *sync.WaitGroup, mcpID string, r analytics.Range, cols *exportCols) *exportStream {
	s := &exportStream{cols: cols, blocks: make(chan int), ack: make(chan struct{})}
	q := fmt.Sprintf(`SELECT %s FROM %s.events WHERE mcp_id = %s AND ts >= %s AND ts < %s
		ORDER BY ts, ts_ms, %s, session_id`, exportColumns, db.db, QuoteString(mcpID), timeLit(r.Lower()), timeLit(r.End()), EventID)
	if db.knobs.proveExport != nil {
		db.knobs.proveExport(ctx, q)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(s.blocks)
		o := nativeOptions(db.cfg, "telemetry-export")
		o.Compress = db.knobs.exportCompress
		c, err := native.Dial(ctx, o)
		if err != nil {
			s.err = err
			return
		}
		defer c.Close()
		cols.src.Attach(c)
		var qid [8]byte
		_, _ = rand.Read(qid[:])
		s.err = c.Query(ctx, "export-"+hex.EncodeToString(qid[:]), q, nil, cols.results, func(rows int) error {
			select {
			case s.blocks <- rows:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case <-s.ack:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return s
}

// exportChunks plans the queries of an export: runs of consecutive days
// with items, cut at exportChunkRows.
func (db *Reads) exportChunks(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.Range, error) {
	type dayCount struct {
		day time.Time
		n   uint64
	}
	var days []dayCount
	q := fmt.Sprintf(`SELECT day, countMerge(calls) FROM %s.mcp_daily WHERE mcp_id = ? AND %s GROUP BY day ORDER BY day`, db.db, dayFilter(r))
	if err := db.query(ctx, "export plan", q, []any{mcpID}, func() []any { d := appendRow(&days); return []any{&d.day, &d.n} }); err != nil {
		return nil, err
	}
	var chunks []analytics.Range
	var sum uint64
	limit := uint64(exportChunkRows)
	if db.knobs.exportChunk > 0 {
		limit = db.knobs.exportChunk
	}
	for _, d := range days {
		if d.n == 0 {
			continue
		}
		day := analytics.UTCDay(d.day)
		last := len(chunks) - 1
		if last >= 0 && chunks[last].To.AddDate(0, 0, 1).Equal(day) && sum+d.n <= limit {
			chunks[last].To, sum = day, sum+d.n
			continue
		}
		chunks, sum = append(chunks, analytics.Range{From: day, To: day}), d.n
	}
	return chunks, nil
}

// exportColumns are the columns an export reads, in the order of
// exportCols.results. Times come as UInt32 seconds (the columns'
// DateTime('UTC') type carries its zone in its name).
const exportColumns = `toUInt32(ts), ts_ms, toUInt32(received_at), ` + EventID + `, session_id, method, name, duration_ms, has_duration, is_error,
	error_type, error_message, client_name, client_version, server_version, user_id, attr_keys, attr_values, protocol_version,
	error_kind, response_bytes, args_hash`

// exportCols are the decoded columns of one block of an export query.
type exportCols struct {
	ts, received                           chproto.ColUInt32
	ms                                     chproto.ColUInt16
	id, session, name, errMsg, user        native.Str
	method, errType, client, clientV, serv native.LCString
	proto, errKind                         native.LCString
	argsHash                               native.Str
	respBytes                              chproto.ColInt64
	duration                               chproto.ColFloat64
	hasDur, isErr                          chproto.ColUInt8
	attrKeys, attrValues                   native.ArrStr
	results                                chproto.Results
	src                                    native.Source
}

func newExportCols() *exportCols {
	c := &exportCols{}
	for _, s := range []interface{ Use(*native.Source) }{&c.id, &c.session, &c.name, &c.errMsg, &c.user, &c.method, &c.errType,
		&c.client, &c.clientV, &c.serv, &c.proto, &c.attrKeys, &c.attrValues, &c.errKind, &c.argsHash} {
		s.Use(&c.src)
	}
	for _, col := range []chproto.ColResult{&c.ts, &c.ms, &c.received, &c.id, &c.session, &c.method, &c.name, &c.duration,
		&c.hasDur, &c.isErr, &c.errType, &c.errMsg, &c.client, &c.clientV, &c.serv, &c.user, &c.attrKeys, &c.attrValues, &c.proto,
		&c.errKind, &c.respBytes, &c.argsHash} {
		c.results = append(c.results, chproto.ResultColumn{Data: col}) // names taken from the block
	}
	return c
}

// each calls f for each of the block's rows, filling it with the row's
// cells in place (valid during the call only).
func (c *exportCols) each(rows int, it *analytics.ExportedItem, f func(*analytics.ExportedItem) error) error {
	for _, col := range c.results {
		if col.Data.Rows() != rows {
			return fmt.Errorf("export: column %s has %d rows of %d", col.Name, col.Data.Rows(), rows)
		}
	}
	var kStart, vStart uint64
	for i := 0; i < rows; i++ {
		it.Timestamp = time.Unix(int64(c.ts[i]), int64(c.ms[i])*int64(time.Millisecond)).UTC()
		it.ReceivedAt = time.Unix(int64(c.received[i]), 0).UTC()
		it.ID, it.SessionID, it.Name = c.id.At(i), c.session.At(i), c.name.At(i)
		it.Method, it.ErrorType, it.ErrorMessage = c.method.At(i), c.errType.At(i), c.errMsg.At(i)
		it.ClientName, it.ClientVersion, it.ServerVersion = c.client.At(i), c.clientV.At(i), c.serv.At(i)
		it.UserID, it.ProtocolVersion = c.user.At(i), c.proto.At(i)
		it.ErrorKind, it.ResponseBytes, it.ArgsHash = c.errKind.At(i), c.respBytes[i], c.argsHash.At(i)
		it.DurationMs = c.duration[i]
		it.HasDuration = c.hasDur[i] == 1
		it.Status = analytics.StatusOK
		if c.isErr[i] == 1 {
			it.Status = analytics.StatusError
		}
		it.AttrKeys, it.AttrValues = it.AttrKeys[:0], it.AttrValues[:0]
		kEnd, vEnd := c.attrKeys.End(i), c.attrValues.End(i)
		for j := kStart; j < kEnd; j++ {
			it.AttrKeys = append(it.AttrKeys, c.attrKeys.Elem(int(j)))
		}
		for j := vStart; j < vEnd; j++ {
			it.AttrValues = append(it.AttrValues, c.attrValues.Elem(int(j)))
		}
		kStart, vStart = kEnd, vEnd
		if err := f(it); err != nil {
			return err
		}
	}
	return nil
}
