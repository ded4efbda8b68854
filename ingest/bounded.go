package ingest

import "github.com/mcpscope/telemetry/analytics"

// batchIDs is what the bounded duplicate filter (Dedup.Limit) needs to
// know of a flushed batch: its unverified ids (accepted while the filter
// said "maybe", flagged in their records), which are checked against
// ClickHouse and the batch's earlier rows first.
type batchIDs struct {
	unverified map[[2]string]uint64 // (MCP, id) -> key
}

func (b *batchIDs) reset() { clear(b.unverified) }

// noteRecord adds a record read for the next flush to b: the rows of its
// items and the indices among them of its unverified ones.
func (f *Flusher) noteRecord(b *batchIDs, mcpID string, unverified []int, rows []analytics.StoredRow) {
	for _, i := range unverified {
		id := rows[i].Item.ID
		if b.unverified == nil {
			b.unverified = map[[2]string]uint64{}
		}
		b.unverified[[2]string{mcpID, id}] = f.dedup.Key(mcpID, id)
	}
}
