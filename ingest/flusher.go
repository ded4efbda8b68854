package ingest

import (
	"context"
	"fmt"
	"time"
)

// readChunk bounds one read from the log; records are batches of up to
// 1 MiB of JSON, far less in binary form.
const readChunk = 8 << 20

// Run rebuilds the duplicate filter, then flushes the log to the sink until
// ctx is cancelled. While the sink is down it retries with backoff; the log
// keeps accepting up to its disk budget meanwhile.
func (p *Pipeline) Run(ctx context.Context) error {
	if err := p.rebuild(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it was ready
		}
		return err
	}
	close(p.ready)

	after := p.log.Acked()
	// Records appended before this start may have reached ClickHouse before
	// a crash freed them from the log: their batch is checked like the retry
	// of a failed insert.
	replayUntil := p.log.LastSeq()
	if replayUntil > after {
		p.opts.Logger.Info("replaying the write-ahead log", "from_seq", after+1, "to_seq", replayUntil)
	}
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()

	var (
		rows    []Row
		lastSeq uint64
		firstAt time.Time
		// checkStored: some rows may be in ClickHouse already (replayed
		// records, or a failed insert that stored part of its rows).
		checkStored bool
	)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			p.dedup.Sweep(p.opts.Now())
		default:
		}
		wait := p.opts.FlushInterval
		if len(rows) > 0 {
			wait = max(0, p.opts.FlushInterval-time.Since(firstAt))
		}
		recs, err := p.log.Read(ctx, after, readChunk, wait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ingest: read log: %w", err)
		}
		for _, r := range recs {
			after = r.Seq
			lastSeq = r.Seq
			checkStored = checkStored || r.Seq <= replayUntil
			rec, err := DecodeRecord(r.Data)
			if err != nil {
				// A record that passed the log's CRC but does not decode was
				// written by an incompatible version: keep it visible.
				p.opts.Logger.Error("undecodable write-ahead-log record skipped", "seq", r.Seq, "error", err)
				continue
			}
			if len(rows) == 0 {
				firstAt = time.Now()
			}
			for _, it := range rec.Items {
				rows = append(rows, Row{AccountID: rec.AccountID, MCPID: rec.MCPID, Node: p.opts.Node,
					Seq: r.Seq, ReceivedAt: rec.ReceivedAt, Item: it})
			}
		}
		due := len(rows) >= p.opts.FlushMaxRows || (len(rows) > 0 && time.Since(firstAt) >= p.opts.FlushInterval)
		if !due {
			if len(rows) == 0 && lastSeq > p.log.Acked() {
				_ = p.log.Ack(lastSeq) // only undecodable records: nothing to insert
			}
			continue
		}
		start := time.Now()
		if _, err := retry(p, ctx, "insert into ClickHouse", func() (struct{}, error) {
			if checkStored {
				var err error
				if rows, err = p.withoutStored(ctx, rows); err != nil {
					return struct{}{}, err
				}
			}
			err := p.sink.InsertRows(ctx, rows)
			checkStored = err != nil
			return struct{}{}, err
		}); err != nil {
			return nil // ctx cancelled; the log keeps the rows for the next start
		}
		p.opts.Metrics.flushed(len(rows), time.Since(start))
		if err := p.log.Ack(lastSeq); err != nil {
			return fmt.Errorf("ingest: ack log: %w", err)
		}
		rows = rows[:0]
	}
}

// withoutStored drops from rows (in log order) the records that ClickHouse
// already holds, so that they are not counted twice: records replayed after
// a crash that struck between an insert and its ack, and records a failed
// insert stored all the same (on a cluster, the shards that answered may keep their rows when another
// shard is down (18.16 keeps those sent to remote shards); on one server,
// the answer may be lost after the insert). A record is one payload of one
// MCP, so its rows went to one shard in one block: stored whole or not at
// all, short of a server failing half-way through writing a block.
func (p *Pipeline) withoutStored(ctx context.Context, rows []Row) ([]Row, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	stored, err := p.sink.InsertedSeqs(ctx, p.opts.Node, rows[0].Seq, rows[len(rows)-1].Seq)
	if err != nil || len(stored) == 0 {
		return rows, err
	}
	kept := rows[:0]
	for _, r := range rows {
		if !stored[r.Seq] {
			kept = append(kept, r)
		}
	}
	p.opts.Logger.Info("ingest: records already in ClickHouse are left out of the insert", "records", len(stored))
	return kept, nil
}

// retry runs f until it succeeds or ctx ends, backing off up to 5 s.
func retry[T any](p *Pipeline, ctx context.Context, what string, f func() (T, error)) (T, error) {
	backoff := 100 * time.Millisecond
	for {
		v, err := f()
		if err == nil {
			return v, nil
		}
		p.opts.Metrics.flushFailed()
		p.opts.Logger.Warn("ingest: "+what+" failed; retrying", "error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// rebuild fills the duplicate filter with the ids accepted in the window:
// those already in ClickHouse and those still waiting in the log.
func (p *Pipeline) rebuild(ctx context.Context) error {
	now := p.opts.Now()
	since := now.Add(-p.opts.DedupWindow)
	if _, err := retry(p, ctx, "load recent item ids", func() (struct{}, error) {
		return struct{}{}, p.sink.RecentIDs(ctx, since, func(mcpID, id string) { p.dedup.Reserve(mcpID, id, now) })
	}); err != nil {
		return err
	}
	after := p.log.Acked()
	for {
		recs, err := p.log.Read(ctx, after, readChunk, 0)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			after = r.Seq
			rec, err := DecodeRecord(r.Data)
			if err != nil {
				continue
			}
			for _, it := range rec.Items {
				if it.ID != "" {
					p.dedup.Reserve(rec.MCPID, it.ID, rec.ReceivedAt)
				}
			}
		}
	}
	p.opts.Logger.Info("duplicate filter ready", "ids", p.dedup.Len())
	return nil
}
