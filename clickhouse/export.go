package clickhouse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/analytics"
)

var _ analytics.Exporter = (*DB)(nil)

// exportChunkRows bounds the rows one export query sorts: an export of a
// long range is one query per run of consecutive days holding at most
// this many items (or one day, however big), so the server sorts a day or
// a few, never the whole range (18.16 cannot read a MergeTree in its
// order, so ORDER BY sorts everything the query reads).
const exportChunkRows = 1_000_000

// Export implements analytics.Exporter from the raw table. The days to
// read come from mcp_daily (a few rollup rows), grouped into chunks of at
// most exportChunkRows items; each chunk is one query sorted by (ts, ts_ms,
// id, session_id), read row by row from the driver's blocks (about 65,000
// rows each), so memory stays flat. Export queries carry the query id
// prefix "export-" and no max_execution_time: they last as long as the
// client reads, and a cancelled ctx cancels the query on the server.
//
// The next chunk's query is sent while the current one streams (on a
// second pooled connection), so the server sorts it meanwhile instead of
// the client waiting for the sort between chunks; it blocks on sending
// once the socket's buffers are full, so memory stays bounded.
func (db *DB) Export(ctx context.Context, mcpID string, r analytics.Range, each func(*analytics.ExportedItem) error) error {
	chunks, err := db.exportChunks(ctx, mcpID, r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	it := &analytics.ExportedItem{}
	var next chan exportQuery
	if len(chunks) > 0 {
		next = db.startExportQuery(ctx, mcpID, chunks[0])
	}
	for i := range chunks {
		q := <-next
		next = nil
		if i+1 < len(chunks) {
			next = db.startExportQuery(ctx, mcpID, chunks[i+1])
		}
		if q.err == nil {
			q.err = scanExport(q.rows, it, each)
			q.rows.Close()
		}
		if q.err != nil {
			cancel()
			if next != nil {
				if p := <-next; p.rows != nil {
					p.rows.Close()
				}
			}
			return q.err
		}
	}
	return nil
}

// exportQuery is a sent export query: its rows, or why it failed.
type exportQuery struct {
	rows driver.Rows
	err  error
}

// startExportQuery sends the query of one chunk in the background.
func (db *DB) startExportQuery(ctx context.Context, mcpID string, r analytics.Range) chan exportQuery {
	ch := make(chan exportQuery, 1)
	go func() {
		var qid [8]byte
		_, _ = rand.Read(qid[:])
		qctx := clickhouse.Context(ctx, clickhouse.WithQueryID("export-"+hex.EncodeToString(qid[:])))
		q := fmt.Sprintf(`SELECT %s FROM %s.events WHERE mcp_id = ? AND ts >= %s AND ts < %s
		ORDER BY ts, ts_ms, id, session_id`, exportColumns, db.db, timeLit(r.Lower()), timeLit(r.End()))
		rows, err := db.conn.Query(qctx, q, mcpID)
		ch <- exportQuery{rows: rows, err: wrapErr("export", err)}
	}()
	return ch
}

// exportChunks plans the queries of an export: runs of consecutive days
// with items, cut at exportChunkRows.
func (db *DB) exportChunks(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.Range, error) {
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
	for _, d := range days {
		if d.n == 0 {
			continue
		}
		day := analytics.UTCDay(d.day)
		last := len(chunks) - 1
		if last >= 0 && chunks[last].To.AddDate(0, 0, 1).Equal(day) && sum+d.n <= exportChunkRows {
			chunks[last].To, sum = day, sum+d.n
			continue
		}
		chunks, sum = append(chunks, analytics.Range{From: day, To: day}), d.n
	}
	return chunks, nil
}

// ExportColumns are the columns an export reads, in scan order.
const exportColumns = `ts, ts_ms, received_at, id, session_id, method, name, duration_ms, has_duration, is_error,
	error_type, error_message, client_name, client_version, server_version, user_id, attr_keys, attr_values`

// scanExport reads the rows of one chunk into it, calling each per row.
func scanExport(rows driver.Rows, it *analytics.ExportedItem, each func(*analytics.ExportedItem) error) error {
	var (
		ts, received          time.Time
		ms                    uint16
		hasDur, isErr         uint8
		method, errType       string
		client, clientV, serv string
	)
	dest := []any{&ts, &ms, &received, &it.ID, &it.SessionID, &method, &it.Name, &it.DurationMs, &hasDur, &isErr,
		&errType, &it.ErrorMessage, &client, &clientV, &serv, &it.UserID, &it.AttrKeys, &it.AttrValues}
	for rows.Next() {
		it.AttrKeys, it.AttrValues = it.AttrKeys[:0], it.AttrValues[:0]
		if err := rows.Scan(dest...); err != nil {
			return wrapErr("export", err)
		}
		it.Timestamp = ts.Add(time.Duration(ms) * time.Millisecond)
		it.ReceivedAt = received
		it.Method, it.ErrorType, it.ClientName, it.ClientVersion, it.ServerVersion = method, errType, client, clientV, serv
		it.HasDuration = hasDur == 1
		it.Status = analytics.StatusOK
		if isErr == 1 {
			it.Status = analytics.StatusError
		}
		if err := each(it); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return wrapErr("export", err)
	}
	return nil
}
