package ingest

import "time"

// batchIDs is what the bounded duplicate filter (Dedup.Limit) needs to
// know of a flushed batch: its unverified ids (accepted while the filter
// said "maybe"), which are checked against ClickHouse and the batch's
// earlier rows first.
type batchIDs struct {
	unverified map[[2]string]unverifiedID // by (MCP, id)
}

// unverifiedID is an unverified id's key and its latest receipt in the
// batch.
type unverifiedID struct {
	key uint64
	at  time.Time
}

func (b *batchIDs) reset() { clear(b.unverified) }

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
		if k := p.dedup.Key(rec.MCPID, it.ID); p.dedup.Unverified(k) {
			if b.unverified == nil {
				b.unverified = map[[2]string]unverifiedID{}
			}
			b.unverified[[2]string{rec.MCPID, it.ID}] = unverifiedID{k, rec.ReceivedAt}
		}
	}
}

// verified tells the filter that the batch's unverified ids are checked
// (and stored, or left out as duplicates).
func (p *Pipeline) verified(b *batchIDs) {
	for _, u := range b.unverified {
		p.dedup.Verified(u.key, u.at)
	}
}
