package ingest

// batchIDs is what the bounded duplicate filter (Dedup.Limit) needs to
// know of a flushed batch: its unverified ids (accepted while the filter
// said "maybe", flagged in their records), which are checked against
// ClickHouse and the batch's earlier rows first.
type batchIDs struct {
	unverified map[[2]string]uint64 // (MCP, id) -> key
}

func (b *batchIDs) reset() { clear(b.unverified) }

// noteRecord adds a record read for the next flush to b.
func (f *Flusher) noteRecord(b *batchIDs, rec Record) {
	for _, i := range rec.Unverified {
		it := &rec.Items[i]
		if b.unverified == nil {
			b.unverified = map[[2]string]uint64{}
		}
		b.unverified[[2]string{rec.MCPID, it.ID}] = f.dedup.Key(rec.MCPID, it.ID)
	}
}
