package analytics

import (
	"context"
	"strconv"
	"time"
)

// StoredRow is one accepted item on its way to the events table, with what
// the item itself does not say: whose it is, when it was accepted, and
// which write-ahead-log record (Node, Seq) carried it.
type StoredRow struct {
	AccountID  string
	MCPID      string
	Node       string
	Seq        uint64
	ReceivedAt time.Time
	Item       Item
}

// RecordDay names the rows of one write-ahead-log record on one UTC day
// (days since 1970-01-01): an insert stores each day of its rows in its
// own part, so a failed insert may have stored some days of a record and
// not others.
type RecordDay struct {
	Seq uint64
	Day int64
}

// DayOf returns the UTC day number of t, as RecordDay counts days.
func DayOf(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - 86399) / 86400
	}
	return s / 86400
}

// Sink is where the ingest pipeline's flushed rows go: ClickHouse
// (clickhouse.DB implements it).
type Sink interface {
	// InsertBatch stores the rows of one flushed batch under its insert
	// id (InsertID; "": none).
	InsertBatch(ctx context.Context, insertID string, rows []StoredRow) error
	// InsertedSeqs reports which log records of this node, among
	// fromSeq..toSeq, already have rows stored, and of which UTC days, so
	// that a replay after a crash (or the retry of a failed insert) does
	// not insert them twice, nor leave out the days an insert cut short
	// did not store. Their items' timestamps lie within tsFrom..tsTo,
	// which bounds what the check reads.
	// The sink first waits until no insert of the node's records still
	// runs on any server: an attempt the client gave up on (or a killed
	// process started) may still be storing its views.
	InsertedSeqs(ctx context.Context, node string, fromSeq, toSeq uint64, tsFrom, tsTo time.Time) (map[RecordDay]bool, error)
	// CompleteViews is called after the retry of a failed insert (and
	// after a replay): every insert of this node's records fromSeq..toSeq
	// that reached the raw table must have reached every rollup too, and
	// the sink re-derives into a rollup what an insert cut short left out
	// of it (the views of one insert are not one transaction). It returns
	// how many (insert, rollup) pairs it completed.
	CompleteViews(ctx context.Context, node string, fromSeq, toSeq uint64, tsFrom, tsTo time.Time) (int, error)
	// RecentIDs lists item ids received since a time, to rebuild the
	// pipeline's duplicate filter.
	RecentIDs(ctx context.Context, since time.Time, fn func(mcpID, id string, receivedAt time.Time)) error
	// StoredIDs reports which of ids (by MCP) are stored from items
	// received since a time, with the latest receipt of each: the check of
	// items accepted while the duplicate filter was not rebuilt yet, or
	// while it said "maybe".
	StoredIDs(ctx context.Context, since time.Time, ids map[string][]string, fn func(mcpID, id string, receivedAt time.Time)) error
}

// InsertID names every attempt to insert one flushed batch: the node and
// the first and last log records of the batch as first read, so the same
// batch always gets the same id, and no two batches of a node do; it
// starts with the node. The sink runs the insert under it (ClickHouse's
// query_id) and, before a retry checks what is stored, waits until no
// server still runs an insert of the node (docs/exactly-once.md, "A retry
// never races the insert it retries").
func InsertID(node string, fromSeq, toSeq uint64) string {
	return node + "/" + strconv.FormatUint(fromSeq, 10) + "-" + strconv.FormatUint(toSeq, 10)
}
