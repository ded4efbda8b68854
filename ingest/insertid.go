package ingest

import (
	"context"
	"strconv"
)

// insertIDKey carries an insert's id in its context.
type insertIDKey struct{}

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

// WithInsertID returns ctx carrying an insert's id for the Sink's
// InsertRows.
func WithInsertID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, insertIDKey{}, id)
}

// InsertIDFrom returns the insert id ctx carries, or "".
func InsertIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(insertIDKey{}).(string)
	return id
}
