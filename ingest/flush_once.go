package ingest

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Exactly once on the flush path (docs/exactly-once.md): what a batch
// covers, the checks of its rows against what ClickHouse and the id
// registries already hold, and the retry of those checks.

// span is what a batch covers: its records and its items' times.
type span struct {
	fromSeq, toSeq uint64
	tsFrom, tsTo   time.Time
}

func spanOf(rows []analytics.StoredRow) span {
	s := span{fromSeq: rows[0].Seq, toSeq: rows[len(rows)-1].Seq, tsFrom: rows[0].Item.Timestamp, tsTo: rows[0].Item.Timestamp}
	for _, r := range rows {
		if ts := r.Item.Timestamp; ts.Before(s.tsFrom) {
			s.tsFrom = ts
		} else if ts.After(s.tsTo) {
			s.tsTo = ts
		}
	}
	return s
}

// withoutStored drops from rows (in log order) the rows that ClickHouse
// already holds, so that they are not counted twice: records replayed after
// a crash that struck between an insert and its ack, and rows a failed
// insert stored all the same (on a cluster, the shards that answered keep
// their rows when another shard is down; on one server, the answer may be
// lost after the insert, or the insert cut after some of its day
// partitions). Rows are checked by record and UTC day: an insert stores
// each day of a shard's rows in one part, whole or not at all.
func (f *Flusher) withoutStored(ctx context.Context, rows []analytics.StoredRow, b span) ([]analytics.StoredRow, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	stored, err := f.sink.InsertedSeqs(ctx, f.node, b.fromSeq, b.toSeq, b.tsFrom, b.tsTo)
	if err != nil || len(stored) == 0 {
		return rows, err
	}
	kept := rows[:0]
	for _, r := range rows {
		if !stored[analytics.RecordDay{Seq: r.Seq, Day: analytics.DayOf(r.Item.Timestamp)}] {
			kept = append(kept, r)
		}
	}
	f.opts.Logger.Info("ingest: rows already in ClickHouse are left out of the insert", "record_days", len(stored))
	return kept, nil
}

// completeViews has the sink re-derive into every rollup the inserts of the
// batch that reached the raw table only.
func (f *Flusher) completeViews(ctx context.Context, b span) error {
	n, err := f.sink.CompleteViews(ctx, f.node, b.fromSeq, b.toSeq, b.tsFrom, b.tsTo)
	if n > 0 {
		f.opts.Metrics.viewsCompleted(n)
		f.opts.Logger.Warn("ingest: an insert cut short had reached the raw table and not every rollup; the rollups were completed",
			"from_seq", b.fromSeq, "to_seq", b.toSeq, "completed", n)
	}
	return err
}

// retry runs try until it succeeds or ctx ends, backing off up to 5 s.
func retry[T any](fl *Flusher, ctx context.Context, what string, try func() (T, error)) (T, error) {
	b := telemetry.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second}
	var v T
	err := b.Retry(ctx, func() (err error) {
		v, err = try()
		return err
	}, func(err error, wait time.Duration) {
		fl.opts.Metrics.flushFailed()
		fl.opts.Logger.Warn("ingest: "+what+" failed; retrying", "error", err, "backoff", wait)
	})
	return v, err
}

// withoutStoredIDs drops the rows whose item id ClickHouse or an earlier
// row of the batch already holds from the window before their receipt
// (every earlier record is stored before the batch is), among the rows of
// records up to verifyUntil (accepted before the duplicate filter knew
// the ids stored before this start) and the unverified ones (accepted
// while the bounded filter said "maybe"; keys by MCP and id).
func (f *Flusher) withoutStoredIDs(ctx context.Context, rows []analytics.StoredRow, verifyUntil uint64, unverified map[[2]string]uint64) ([]analytics.StoredRow, error) {
	check := func(r *analytics.StoredRow) bool {
		if r.Item.ID == "" {
			return false
		}
		_, ok := unverified[[2]string{r.MCPID, r.Item.ID}]
		return ok || r.Seq <= verifyUntil
	}
	ids := map[string][]string{}
	var since time.Time
	for i := range rows {
		if r := &rows[i]; check(r) {
			ids[r.MCPID] = append(ids[r.MCPID], r.Item.ID)
			if since.IsZero() || r.ReceivedAt.Before(since) {
				since = r.ReceivedAt
			}
		}
	}
	if len(ids) == 0 {
		return rows, nil
	}
	// Each row's window ends at its own receipt: the check reads from the
	// earliest one's and compares per row, in the filter's whole seconds.
	stored := map[[2]string]uint32{}
	if err := f.sink.StoredIDs(ctx, since.Add(-f.opts.DedupWindow), ids, func(mcpID, id string, at time.Time) {
		stored[[2]string{mcpID, id}] = stamp(at)
	}); err != nil {
		return rows, err
	}
	window := uint32(f.opts.DedupWindow / time.Second)
	kept := rows[:0]
	for i := range rows {
		r := &rows[i]
		if check(r) {
			at, ok := stored[[2]string{r.MCPID, r.Item.ID}]
			now := stamp(r.ReceivedAt)
			if ok && now-min(now, at) < window {
				if k, ok := unverified[[2]string{r.MCPID, r.Item.ID}]; ok {
					f.dedup.Duplicate(k)
				}
				continue
			}
			// A later copy in this batch (its first copy left the exact
			// table before it was stored) is a duplicate of this one.
			stored[[2]string{r.MCPID, r.Item.ID}] = now
		}
		kept = append(kept, *r)
	}
	if n := len(rows) - len(kept); n > 0 {
		f.opts.Metrics.duplicatesAtFlush(n)
		f.opts.Logger.Info("ingest: items whose id ClickHouse already holds from the window are left out "+
			"(accepted while the duplicate filter was loading, or said maybe)", "items", n)
	}
	return kept, nil
}

// reserveLogged puts in the duplicate filter the ids of the records still
// in the log (accepted, not flushed yet), each from its receipt: it reads
// only the local log, so it is quick and needs no database.
func (f *Flusher) reserveLogged(ctx context.Context) error {
	after := f.log.Acked()
	for {
		recs, err := f.log.Read(ctx, after, readChunk, 0)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		for _, r := range recs {
			after = r.Seq
			rec, err := DecodeRecord(r.Data)
			if r.Lost || err != nil {
				continue
			}
			if at := rec.ReceivedAt.UnixNano(); at > f.lastAt.Load() {
				f.lastAt.Store(at) // new records' receipts come after (uniqueReceipt)
			}
			for _, it := range rec.Items {
				if it.ID != "" {
					f.dedup.Reserve(rec.MCPID, it.ID, rec.ReceivedAt)
				}
			}
		}
	}
}

// loadStored puts in the duplicate filter the ids ClickHouse holds from the
// window, each from its receipt, retrying until ClickHouse answers. It
// fails only when ctx ends.
func (f *Flusher) loadStored(ctx context.Context) error {
	since := f.opts.Now().Add(-f.opts.DedupWindow)
	_, err := retry(f, ctx, "load recent item ids", func() (struct{}, error) {
		return struct{}{}, f.sink.RecentIDs(ctx, since, func(mcpID, id string, at time.Time) { f.dedup.reserveStored(mcpID, id, at) })
	})
	if err == nil {
		f.opts.Logger.Info("duplicate filter ready", "ids", f.dedup.Len())
	}
	return err
}

// ownedRows leaves out of rows (a batch of whole records, up to lastSeq)
// the items their records do not own in the shared registry: those whose
// claim found them accepted by another record (known from Ingest), and,
// for the records whose claim is not known (replayed after a start, or
// whose claim failed or did not end in time), those that Settle finds
// owned by another record, in one registry call for the batch, retried
// until the registry answers. The items without an id of a payload
// answered 503 are left out too: the client retries them. It fails only
// when ctx ends.
func (f *Flusher) ownedRows(ctx context.Context, rows []analytics.StoredRow, lastSeq, replayUntil uint64) ([]analytics.StoredRow, error) {
	outcomes := f.claimOutcomes(ctx, rows, replayUntil)
	var unsettled []analytics.IDClaim
	for i := range rows {
		r := &rows[i]
		if o, ok := outcomes[r.Seq]; (!ok || o.unsettled) && r.Item.ID != "" {
			if n := len(unsettled); n == 0 || unsettled[n-1].Seq != r.Seq {
				unsettled = append(unsettled, analytics.IDClaim{Seq: r.Seq, MCPID: r.MCPID, At: r.ReceivedAt})
			}
			c := &unsettled[len(unsettled)-1]
			c.IDs = append(c.IDs, r.Item.ID)
		}
	}
	settledLost := 0
	if len(unsettled) > 0 {
		lost, err := retry(f, ctx, "settle shared id claims", func() ([][]string, error) {
			return f.opts.Registry.Settle(ctx, f.node, unsettled)
		})
		if err != nil {
			return rows, err
		}
		for i, c := range unsettled {
			o := claimOutcome{lost: make(map[string]bool, len(lost[i])), refused: outcomes[c.Seq].refused}
			for _, id := range lost[i] {
				o.lost[id] = true
			}
			outcomes[c.Seq] = o
			settledLost += len(lost[i])
		}
	}
	kept := rows[:0]
	for i := range rows {
		r := &rows[i]
		if o := outcomes[r.Seq]; (r.Item.ID == "" && !o.refused) || (r.Item.ID != "" && !o.lost[r.Item.ID]) {
			kept = append(kept, *r)
		}
	}
	f.claimMu.Lock()
	for seq := range outcomes {
		delete(f.claims, seq)
	}
	f.settledThrough = max(f.settledThrough, lastSeq)
	f.claimMu.Unlock()
	if settledLost > 0 {
		f.opts.Metrics.duplicatesAtFlush(settledLost)
		f.opts.Logger.Warn("ingest: items of records whose shared claim was settled at flush are left out: "+
			"another record owns them (a retry accepted by this or another instance)", "items", settledLost)
	}
	return kept, nil
}

// claimOutcomes returns the claim outcomes Ingest left for the records of
// rows, waiting (up to a registry call's time) for the claims still in
// flight; a record replayed after a start, or whose claim does not end in
// time, has none (it is settled).
func (f *Flusher) claimOutcomes(ctx context.Context, rows []analytics.StoredRow, replayUntil uint64) map[uint64]claimOutcome {
	out := map[uint64]claimOutcome{}
	var waiting []uint64
	for i := range rows {
		if seq := rows[i].Seq; seq > replayUntil && (i == 0 || rows[i-1].Seq != seq) {
			waiting = append(waiting, seq)
		}
	}
	timeout := time.NewTimer(registryTimeout + time.Second)
	defer timeout.Stop()
	for {
		f.claimMu.Lock()
		left := waiting[:0]
		for _, seq := range waiting {
			if o, ok := f.claims[seq]; ok {
				out[seq] = o
			} else {
				left = append(left, seq)
			}
		}
		waiting = left
		signal := f.claimSignal
		f.claimMu.Unlock()
		if len(waiting) == 0 {
			return out
		}
		select {
		case <-signal:
		case <-timeout.C:
			return out
		case <-ctx.Done():
			return out
		}
	}
}
