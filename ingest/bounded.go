package ingest

// batchIDs is what the bounded duplicate filter (Dedup.Limit) needs to
// know of a flushed batch: the keys of its ids, marked stored once the
// batch is in ClickHouse, and its unverified ids (accepted while the
// filter said "maybe"), which ClickHouse is asked about first.
type batchIDs struct {
	keys       []uint64
	unverified map[[2]string]uint64 // (MCP, id) -> key
}

func (b *batchIDs) reset() {
	b.keys = b.keys[:0]
	clear(b.unverified)
}

// noteRecord adds a record read for the next flush to b (only with the
// bounded filter: without it nothing is ever let go of).
func (p *Pipeline) noteRecord(b *batchIDs, rec Record) {
	if p.dedup.filter == nil {
		return
	}
	for i := range rec.Items {
		it := &rec.Items[i]
		if it.ID == "" {
			continue
		}
		k := p.dedup.Key(rec.MCPID, it.ID)
		b.keys = append(b.keys, k)
		if p.dedup.Unverified(k) {
			if b.unverified == nil {
				b.unverified = map[[2]string]uint64{}
			}
			b.unverified[[2]string{rec.MCPID, it.ID}] = k
		}
	}
}
