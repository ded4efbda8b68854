package ingest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/wal"
)

// readChunk bounds one read from the log; records are batches of up to
// 1 MiB of JSON, far less in binary form.
const readChunk = 8 << 20

// flushMaxBytes bounds a batch by its records' bytes, beside
// FlushMaxRows: items of 32 long attributes are over 100 KB each, and
// FlushMaxRows of them read from a backlog (after a ClickHouse outage)
// would be gigabytes in memory. A batch is due once it holds this much; it
// may pass it by one read (readChunk). Two batches are in memory at most.
const flushMaxBytes = 32 << 20

// Run rebuilds the duplicate filter, then flushes the log to the sink until
// ctx is cancelled. While the sink is down it retries with backoff; the log
// keeps accepting up to its disk budget meanwhile.
//
// Start-up does not wait for ClickHouse: once the ids still in the log are
// in the filter, Ingest accepts payloads (so a restart during an outage
// keeps ingest going); the ids ClickHouse holds are loaded next, and the
// records accepted before they were get their ids checked against
// ClickHouse when they are flushed, so a retry across the restart is still
// stored once.
func (p *Pipeline) Run(ctx context.Context) error {
	replayUntil, verifyUntil, ready, err := p.startRun(ctx)
	if !ready {
		return err
	}

	after := p.log.Acked()
	if replayUntil > after {
		p.opts.Logger.Info("replaying the write-ahead log", "from_seq", after+1, "to_seq", replayUntil)
	}
	// The log is read and decoded into the next batch while the current
	// one is inserted (gather): the service's work per item overlaps
	// ClickHouse's instead of adding to it. Inserts and acks stay in log
	// order, one batch at a time; two batches are in memory at most.
	gctx, stop := context.WithCancel(ctx)
	full, free := make(chan *flushBatch), make(chan *flushBatch, 2)
	free <- new(flushBatch)
	free <- new(flushBatch)
	gathered := make(chan error, 1)
	clock := new(flushClock)
	go func() { gathered <- p.gather(gctx, after, replayUntil, full, free, clock) }()
	defer func() {
		stop()
		if gathered != nil {
			<-gathered
		}
	}()
	defer p.startExpiry(ctx)()
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	idle := time.NewTicker(p.opts.FlushInterval)
	defer idle.Stop()
	var flushed uint64 // the last seq flushed, acked unless the ack failed
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			p.dedup.Sweep(p.opts.Now())
		case <-idle.C:
			if flushed > p.log.Acked() {
				p.ack(flushed) // an ack that failed before
			}
		case err := <-gathered:
			gathered = nil
			return err
		case b := <-full:
			clock.busy.Store(true)
			if err := p.flush(ctx, b, replayUntil, verifyUntil); err != nil {
				return nil // ctx cancelled; the log keeps the rows for the next start
			}
			clock.lastEnd.Store(time.Now().UnixNano())
			clock.busy.Store(false)
			flushed = b.lastSeq
			b.reset()
			free <- b
		}
	}
}

// gather reads the log after after into batches and hands each one due
// (batchDue) to Run (full), taking the next one to fill from free. It
// returns nil when ctx ends, or the log's read error.
func (p *Pipeline) gather(ctx context.Context, after, replayUntil uint64, full chan<- *flushBatch, free <-chan *flushBatch, clock *flushClock) error {
	b := <-free
	for {
		wait, due := p.batchDue(b, clock)
		if due {
			select {
			case full <- b:
			case <-ctx.Done():
				return nil
			}
			select {
			case b = <-free:
			case <-ctx.Done():
				return nil
			}
			continue
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
			p.collect(b, r, replayUntil)
		}
	}
}

// flushClock is what gather knows of Run's inserts.
type flushClock struct {
	busy    atomic.Bool  // Run is storing a batch
	lastEnd atomic.Int64 // when it last stored one (Unix ns)
}

// batchDue says whether b is due, or else how long to wait for more
// records. A batch is due at FlushMaxRows rows, or FlushInterval after
// its first row or the end of the last insert, whichever is later: the
// batches of a log read ahead are those of a log read after each insert,
// and no row waits longer (an insert per flush interval plus the insert,
// not an insert per interval: fewer, bigger inserts cost ClickHouse less
// per row). While Run inserts, a batch grows up to FlushMaxRows. A batch
// of undecodable records only (no rows) is due, for Run to ack in order,
// and so is a batch of flushMaxBytes.
func (p *Pipeline) batchDue(b *flushBatch, clock *flushClock) (wait time.Duration, due bool) {
	switch {
	case len(b.rows) >= p.opts.FlushMaxRows || b.bytes >= flushMaxBytes || (len(b.rows) == 0 && b.lastSeq > 0):
		return 0, true
	case len(b.rows) == 0 || clock.busy.Load():
		return p.opts.FlushInterval, false
	}
	start := b.firstAt
	if end := clock.lastEnd.Load(); end > start.UnixNano() {
		start = time.Unix(0, end)
	}
	left := p.opts.FlushInterval - time.Since(start)
	return max(0, left), left <= 0
}

// flush stores the batch b (its rows the registry leaves this node, when
// shared) and acks its records. It fails only when ctx ends.
func (p *Pipeline) flush(ctx context.Context, b *flushBatch, replayUntil, verifyUntil uint64) error {
	if len(b.rows) == 0 {
		p.ack(b.lastSeq) // only undecodable records
		return nil
	}
	start := time.Now()
	if p.opts.Registry != nil {
		var err error
		if b.rows, err = p.ownedRows(ctx, b.rows, b.lastSeq, replayUntil); err != nil {
			return err
		}
		if len(b.rows) == 0 {
			p.ack(b.lastSeq)
			return nil
		}
	}
	if err := p.insertBatch(ctx, b, verifyUntil); err != nil {
		return err
	}
	p.opts.Metrics.flushed(len(b.rows), time.Since(start))
	p.ack(b.lastSeq)
	return nil
}

// startRun makes the pipeline ready: it reserves the ids of the log's
// records, then (without a shared registry) loads the ids ClickHouse
// holds. Records appended before this start may have reached ClickHouse
// before a crash freed them from the log: their batch, up to replayUntil,
// is checked like the retry of a failed insert; the records up to
// verifyUntil were accepted before the stored ids were loaded. ready is
// false when Run must return err (nil: stopped before it was ready).
func (p *Pipeline) startRun(ctx context.Context) (replayUntil, verifyUntil uint64, ready bool, err error) {
	replayUntil = p.log.LastSeq()
	if err := p.reserveLogged(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, 0, false, nil // stopped before it was ready
		}
		return 0, 0, false, err
	}
	close(p.ready)
	if !p.loaded.Load() { // no shared registry: load what ClickHouse holds
		if err := p.loadStored(ctx); err != nil {
			return 0, 0, false, nil // ctx cancelled
		}
		p.loadMu.Lock()
		p.loaded.Store(true)
		verifyUntil = p.log.LastSeq()
		p.loadMu.Unlock()
	}
	return replayUntil, verifyUntil, true, nil
}

// flushBatch is the batch Run gathers from the log and flushes.
type flushBatch struct {
	rows    []analytics.StoredRow
	lastSeq uint64
	firstAt time.Time
	bytes   int // of the records read into it (flushMaxBytes)
	// checkStored: some rows may be in ClickHouse already (replayed
	// records, or a failed insert that stored part of its rows).
	checkStored bool
	ids         batchIDs // the bounded filter's view of the batch
}

// reset empties b for the next batch, keeping its rows' array.
func (b *flushBatch) reset() {
	clear(b.rows[:cap(b.rows)]) // the items' strings and maps go with the batch (kept or left out)
	b.rows = b.rows[:0]
	b.lastSeq, b.firstAt, b.checkStored, b.bytes = 0, time.Time{}, false, 0
	b.ids.reset()
}

// collect adds the items of the log record r to the batch b.
func (p *Pipeline) collect(b *flushBatch, r wal.Record, replayUntil uint64) {
	b.lastSeq = r.Seq
	b.bytes += len(r.Data)
	b.checkStored = b.checkStored || r.Seq <= replayUntil
	if r.Lost {
		// Open found this record destroyed on disk (counted in
		// telemetry_wal_lost_records_total); its items cannot come back.
		p.opts.Logger.Error("write-ahead-log record lost to damage on disk; its items are gone", "seq", r.Seq)
		return
	}
	rec, err := DecodeRecord(r.Data)
	if err != nil {
		// A record that passed the log's CRC but does not decode was
		// written by an incompatible version: keep it visible.
		p.opts.Logger.Error("undecodable write-ahead-log record skipped", "seq", r.Seq, "error", err)
		return
	}
	if len(b.rows) == 0 {
		b.firstAt = time.Now()
	}
	for _, it := range rec.Items {
		b.rows = append(b.rows, analytics.StoredRow{AccountID: rec.AccountID, MCPID: rec.MCPID, Node: p.node,
			Seq: r.Seq, ReceivedAt: rec.ReceivedAt, Item: it})
	}
	p.noteRecord(&b.ids, rec)
}

// insertBatch inserts the batch b into the sink, retrying until it is
// stored or ctx is cancelled (the only error).
func (p *Pipeline) insertBatch(ctx context.Context, b *flushBatch, verifyUntil uint64) error {
	// What a retry checks and completes: the batch before the check
	// leaves stored rows out. Taken by the first attempt that checks
	// (an attempt before it leaves out only rows it did not insert),
	// so the usual path, which never checks, does not pay for it.
	var batch span
	// Every attempt runs under the batch's id; a retry's checks first
	// wait for the node's inserts given up on to end on the server.
	ictx := analytics.WithInsertID(ctx, analytics.InsertID(p.node, b.rows[0].Seq, b.rows[len(b.rows)-1].Seq))
	_, err := retry(p, ctx, "insert into ClickHouse", func() (struct{}, error) {
		retried := b.checkStored
		if b.checkStored {
			if batch.toSeq == 0 {
				batch = spanOf(b.rows)
			}
			var err error
			if b.rows, err = p.withoutStored(ictx, b.rows, batch); err != nil {
				return struct{}{}, err
			}
		}
		if len(b.rows) > 0 && (b.rows[0].Seq <= verifyUntil || len(b.ids.unverified) > 0) {
			var err error
			if b.rows, err = p.withoutStoredIDs(ctx, b.rows, verifyUntil, b.ids.unverified); err != nil {
				return struct{}{}, err
			}
		}
		err := p.sink.InsertRows(ictx, b.rows)
		if err == nil && retried {
			// An earlier attempt (or run) may have stored some of the
			// batch in the raw table and not in every rollup.
			err = p.completeViews(ictx, batch)
		}
		b.checkStored = err != nil
		return struct{}{}, err
	})
	return err
}

// expireEvery is how often the shared registry's ids older than the
// window are deleted (tests shorten it).
var expireEvery = time.Minute

// startExpiry deletes the shared registry's ids older than the window
// every expireEvery, in a goroutine of its own: a sweep of the registry's
// table (docs/exactly-once.md, "Shared dedup") reads all of it every few
// hours, and a flush must not wait for it. It returns the function that
// stops it and waits for it.
func (p *Pipeline) startExpiry(ctx context.Context) (stop func()) {
	if p.opts.Registry == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(expireEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.expireShared(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// expireShared deletes the shared registry's ids older than the window, a
// batch at a time (every instance does it; they share the work).
func (p *Pipeline) expireShared(ctx context.Context) {
	const batch = 10000
	for ctx.Err() == nil {
		n, err := p.opts.Registry.Expire(ctx, p.opts.Now(), batch)
		if err != nil {
			p.opts.Logger.Warn("ingest: expiring shared item ids failed; will retry", "error", err)
			return
		}
		if n < batch {
			return
		}
	}
}

// ack frees the log up to seq. A failed checkpoint write (disk full, I/O
// error) is not fatal: the rows are stored, the log keeps them a little
// longer, and the next flush (or idle round) acks again. Were the process
// to stop meanwhile, replay finds the rows in ClickHouse and skips them.
func (p *Pipeline) ack(seq uint64) {
	if err := p.log.Ack(seq); err != nil {
		p.opts.Logger.Error("ingest: cannot acknowledge flushed records in the log; will retry", "seq", seq, "error", err)
	}
}

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
func (p *Pipeline) withoutStored(ctx context.Context, rows []analytics.StoredRow, b span) ([]analytics.StoredRow, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	stored, err := p.sink.InsertedSeqs(ctx, p.node, b.fromSeq, b.toSeq, b.tsFrom, b.tsTo)
	if err != nil || len(stored) == 0 {
		return rows, err
	}
	kept := rows[:0]
	for _, r := range rows {
		if !stored[analytics.RecordDay{Seq: r.Seq, Day: analytics.DayOf(r.Item.Timestamp)}] {
			kept = append(kept, r)
		}
	}
	p.opts.Logger.Info("ingest: rows already in ClickHouse are left out of the insert", "record_days", len(stored))
	return kept, nil
}

// completeViews has the sink re-derive into every rollup the inserts of the
// batch that reached the raw table only.
func (p *Pipeline) completeViews(ctx context.Context, b span) error {
	n, err := p.sink.CompleteViews(ctx, p.node, b.fromSeq, b.toSeq, b.tsFrom, b.tsTo)
	if n > 0 {
		p.opts.Metrics.viewsCompleted(n)
		p.opts.Logger.Warn("ingest: an insert cut short had reached the raw table and not every rollup; the rollups were completed",
			"from_seq", b.fromSeq, "to_seq", b.toSeq, "completed", n)
	}
	return err
}

// retry runs f until it succeeds or ctx ends, backing off up to 5 s.
func retry[T any](p *Pipeline, ctx context.Context, what string, f func() (T, error)) (T, error) {
	b := telemetry.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second}
	var v T
	err := b.Retry(ctx, func() (err error) {
		v, err = f()
		return err
	}, func(err error, wait time.Duration) {
		p.opts.Metrics.flushFailed()
		p.opts.Logger.Warn("ingest: "+what+" failed; retrying", "error", err, "backoff", wait)
	})
	return v, err
}

// withoutStoredIDs drops the rows whose item id ClickHouse or an earlier
// row of the batch already holds from the window before their receipt
// (every earlier record is stored before the batch is), among the rows of
// records up to verifyUntil (accepted before the duplicate filter knew
// the ids stored before this start) and the unverified ones (accepted
// while the bounded filter said "maybe"; keys by MCP and id).
func (p *Pipeline) withoutStoredIDs(ctx context.Context, rows []analytics.StoredRow, verifyUntil uint64, unverified map[[2]string]uint64) ([]analytics.StoredRow, error) {
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
	if err := p.sink.StoredIDs(ctx, since.Add(-p.opts.DedupWindow), ids, func(mcpID, id string, at time.Time) {
		stored[[2]string{mcpID, id}] = stamp(at)
	}); err != nil {
		return rows, err
	}
	window := uint32(p.opts.DedupWindow / time.Second)
	kept := rows[:0]
	for i := range rows {
		r := &rows[i]
		if check(r) {
			at, ok := stored[[2]string{r.MCPID, r.Item.ID}]
			now := stamp(r.ReceivedAt)
			if ok && now-min(now, at) < window {
				if k, ok := unverified[[2]string{r.MCPID, r.Item.ID}]; ok {
					p.dedup.Duplicate(k)
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
		p.opts.Metrics.duplicatesAtFlush(n)
		p.opts.Logger.Info("ingest: items whose id ClickHouse already holds from the window are left out "+
			"(accepted while the duplicate filter was loading, or said maybe)", "items", n)
	}
	return kept, nil
}

// reserveLogged puts in the duplicate filter the ids of the records still
// in the log (accepted, not flushed yet), each from its receipt: it reads
// only the local log, so it is quick and needs no database.
func (p *Pipeline) reserveLogged(ctx context.Context) error {
	after := p.log.Acked()
	for {
		recs, err := p.log.Read(ctx, after, readChunk, 0)
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
			if at := rec.ReceivedAt.UnixNano(); at > p.lastAt.Load() {
				p.lastAt.Store(at) // new records' receipts come after (uniqueReceipt)
			}
			for _, it := range rec.Items {
				if it.ID != "" {
					p.dedup.Reserve(rec.MCPID, it.ID, rec.ReceivedAt)
				}
			}
		}
	}
}

// loadStored puts in the duplicate filter the ids ClickHouse holds from the
// window, each from its receipt, retrying until ClickHouse answers. It
// fails only when ctx ends.
func (p *Pipeline) loadStored(ctx context.Context) error {
	since := p.opts.Now().Add(-p.opts.DedupWindow)
	_, err := retry(p, ctx, "load recent item ids", func() (struct{}, error) {
		return struct{}{}, p.sink.RecentIDs(ctx, since, func(mcpID, id string, at time.Time) { p.dedup.reserveStored(mcpID, id, at) })
	})
	if err == nil {
		p.opts.Logger.Info("duplicate filter ready", "ids", p.dedup.Len())
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
func (p *Pipeline) ownedRows(ctx context.Context, rows []analytics.StoredRow, lastSeq, replayUntil uint64) ([]analytics.StoredRow, error) {
	outcomes := p.claimOutcomes(ctx, rows, replayUntil)
	var unsettled []Claim
	for i := range rows {
		r := &rows[i]
		if o, ok := outcomes[r.Seq]; (!ok || o.unsettled) && r.Item.ID != "" {
			if n := len(unsettled); n == 0 || unsettled[n-1].Seq != r.Seq {
				unsettled = append(unsettled, Claim{Seq: r.Seq, MCPID: r.MCPID, At: r.ReceivedAt})
			}
			c := &unsettled[len(unsettled)-1]
			c.IDs = append(c.IDs, r.Item.ID)
		}
	}
	settledLost := 0
	if len(unsettled) > 0 {
		lost, err := retry(p, ctx, "settle shared id claims", func() ([][]string, error) {
			return p.opts.Registry.Settle(ctx, p.node, unsettled)
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
	p.claimMu.Lock()
	for seq := range outcomes {
		delete(p.claims, seq)
	}
	p.settledThrough = max(p.settledThrough, lastSeq)
	p.claimMu.Unlock()
	if settledLost > 0 {
		p.opts.Metrics.duplicatesAtFlush(settledLost)
		p.opts.Logger.Warn("ingest: items of records whose shared claim was settled at flush are left out: "+
			"another record owns them (a retry accepted by this or another instance)", "items", settledLost)
	}
	return kept, nil
}

// claimOutcomes returns the claim outcomes Ingest left for the records of
// rows, waiting (up to a registry call's time) for the claims still in
// flight; a record replayed after a start, or whose claim does not end in
// time, has none (it is settled).
func (p *Pipeline) claimOutcomes(ctx context.Context, rows []analytics.StoredRow, replayUntil uint64) map[uint64]claimOutcome {
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
		p.claimMu.Lock()
		left := waiting[:0]
		for _, seq := range waiting {
			if o, ok := p.claims[seq]; ok {
				out[seq] = o
			} else {
				left = append(left, seq)
			}
		}
		waiting = left
		signal := p.claimSignal
		p.claimMu.Unlock()
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
