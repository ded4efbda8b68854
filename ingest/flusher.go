package ingest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

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
func (f *Flusher) Run(ctx context.Context) error {
	replayUntil, verifyUntil, ready, err := f.startRun(ctx)
	if !ready {
		return err
	}

	after := f.log.Acked()
	if replayUntil > after {
		f.opts.Logger.Info("replaying the write-ahead log", "from_seq", after+1, "to_seq", replayUntil)
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
	go func() { gathered <- f.gather(gctx, after, replayUntil, full, free, clock) }()
	defer func() {
		stop()
		if gathered != nil {
			<-gathered
		}
	}()
	defer f.startExpiry(ctx)()
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	idle := time.NewTicker(f.opts.FlushInterval)
	defer idle.Stop()
	var flushed uint64 // the last seq flushed, acked unless the ack failed
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			f.dedup.Sweep(f.opts.Now())
		case <-idle.C:
			if flushed > f.log.Acked() {
				f.ack(flushed) // an ack that failed before
			}
		case err := <-gathered:
			gathered = nil
			return err
		case b := <-full:
			clock.busy.Store(true)
			if err := f.flush(ctx, b, replayUntil, verifyUntil); err != nil {
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
func (f *Flusher) gather(ctx context.Context, after, replayUntil uint64, full chan<- *flushBatch, free <-chan *flushBatch, clock *flushClock) error {
	b := <-free
	for {
		wait, due := f.batchDue(b, clock)
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
		recs, err := f.log.Read(ctx, after, readChunk, wait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ingest: read log: %w", err)
		}
		for _, r := range recs {
			after = r.Seq
			f.collect(b, r, replayUntil)
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
func (f *Flusher) batchDue(b *flushBatch, clock *flushClock) (wait time.Duration, due bool) {
	switch {
	case len(b.rows) >= f.opts.FlushMaxRows || b.bytes >= flushMaxBytes || (len(b.rows) == 0 && b.lastSeq > 0):
		return 0, true
	case len(b.rows) == 0 || clock.busy.Load():
		return f.opts.FlushInterval, false
	}
	start := b.firstAt
	if end := clock.lastEnd.Load(); end > start.UnixNano() {
		start = time.Unix(0, end)
	}
	left := f.opts.FlushInterval - time.Since(start)
	return max(0, left), left <= 0
}

// flush stores the batch b (its rows the registry leaves this node, when
// shared) and acks its records. It fails only when ctx ends.
func (f *Flusher) flush(ctx context.Context, b *flushBatch, replayUntil, verifyUntil uint64) error {
	if len(b.rows) == 0 {
		f.ack(b.lastSeq) // only undecodable records
		return nil
	}
	start := time.Now()
	if f.opts.Registry != nil {
		var err error
		if b.rows, err = f.ownedRows(ctx, b.rows, b.lastSeq, replayUntil); err != nil {
			return err
		}
		if len(b.rows) == 0 {
			f.ack(b.lastSeq)
			return nil
		}
	}
	if err := f.insertBatch(ctx, b, verifyUntil); err != nil {
		return err
	}
	f.opts.Metrics.flushed(len(b.rows), time.Since(start))
	f.ack(b.lastSeq)
	return nil
}

// startRun makes the pipeline ready: it reserves the ids of the log's
// records, then (without a shared registry) loads the ids ClickHouse
// holds. Records appended before this start may have reached ClickHouse
// before a crash freed them from the log: their batch, up to replayUntil,
// is checked like the retry of a failed insert; the records up to
// verifyUntil were accepted before the stored ids were loaded. ready is
// false when Run must return err (nil: stopped before it was ready).
func (f *Flusher) startRun(ctx context.Context) (replayUntil, verifyUntil uint64, ready bool, err error) {
	replayUntil = f.log.LastSeq()
	if err := f.reserveLogged(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, 0, false, nil // stopped before it was ready
		}
		return 0, 0, false, err
	}
	close(f.ready)
	if !f.loaded.Load() { // no shared registry: load what ClickHouse holds
		if err := f.loadStored(ctx); err != nil {
			return 0, 0, false, nil // ctx cancelled
		}
		f.loadMu.Lock()
		f.loaded.Store(true)
		verifyUntil = f.log.LastSeq()
		f.loadMu.Unlock()
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
	// dirty is how many rows of the array collect wrote since reset:
	// reset clears those, not the whole array (FlushMaxRows rows, some
	// 17 MB, cleared after every batch of a few thousand was a tenth of
	// the flusher's CPU).
	dirty int
}

// reset empties b for the next batch, keeping its rows' array.
func (b *flushBatch) reset() {
	clear(b.rows[:min(b.dirty, cap(b.rows))]) // the items' strings and maps go with the batch (kept or left out)
	b.rows, b.dirty = b.rows[:0], 0
	b.lastSeq, b.firstAt, b.checkStored, b.bytes = 0, time.Time{}, false, 0
	b.ids.reset()
}

// minBatchRows is the first size of a batch's rows array.
const minBatchRows = 4096

// collect adds the items of the log record r to the batch b.
func (f *Flusher) collect(b *flushBatch, r wal.Record, replayUntil uint64) {
	b.lastSeq = r.Seq
	b.bytes += len(r.Data)
	b.checkStored = b.checkStored || r.Seq <= replayUntil
	if r.Lost {
		// Open found this record destroyed on disk (counted in
		// telemetry_wal_lost_records_total); its items cannot come back.
		f.opts.Logger.Error("write-ahead-log record lost to damage on disk; its items are gone", "seq", r.Seq)
		return
	}
	// The items are decoded straight into the batch's rows. The rows'
	// array is kept from batch to batch (reset); it grows by doubling
	// from minBatchRows up to FlushMaxRows (a read may pass that by one
	// readChunk), not by append's quarters: growing a batch of 50,000
	// rows of 350 bytes a quarter at a time was a sixth of the service's
	// CPU in a 30-second bench run. A service whose batches stay small
	// keeps (and clears, and the collector scans) a small array.
	start := len(b.rows)
	var rec Record
	err := rec.decode(r.Data, true, func(n int) { // wal.Record.Data is ours
		if need := start + n; need > cap(b.rows) {
			size := min(max(need, 2*cap(b.rows), minBatchRows), max(need, f.opts.FlushMaxRows))
			b.rows = slices.Grow(b.rows, size-start)
		}
		b.rows = b.rows[:start+n]
		b.dirty = max(b.dirty, start+n)
	}, func(i int) *analytics.Item { return &b.rows[start+i].Item })
	if err != nil {
		clear(b.rows[start:])
		b.rows = b.rows[:start]
		// A record that passed the log's CRC but does not decode was
		// written by an incompatible version: keep it visible.
		f.opts.Logger.Error("undecodable write-ahead-log record skipped", "seq", r.Seq, "error", err)
		return
	}
	if start == 0 {
		b.firstAt = time.Now()
	}
	rows := b.rows[start:]
	for i := range rows {
		row := &rows[i]
		row.AccountID, row.MCPID, row.Node, row.Seq, row.ReceivedAt = rec.AccountID, rec.MCPID, f.node, r.Seq, rec.ReceivedAt
	}
	f.noteRecord(&b.ids, rec.MCPID, rec.Unverified, rows)
}

// insertBatch inserts the batch b into the sink, retrying until it is
// stored or ctx is cancelled (the only error).
func (f *Flusher) insertBatch(ctx context.Context, b *flushBatch, verifyUntil uint64) error {
	// What a retry checks and completes: the batch before the check
	// leaves stored rows out. Taken by the first attempt that checks
	// (an attempt before it leaves out only rows it did not insert),
	// so the usual path, which never checks, does not pay for it.
	var batch span
	// Every attempt runs under the batch's id; a retry's checks first
	// wait for the node's inserts given up on to end on the server.
	insertID := analytics.InsertID(f.node, b.rows[0].Seq, b.rows[len(b.rows)-1].Seq)
	_, err := retry(f, ctx, "insert into ClickHouse", func() (struct{}, error) {
		retried := b.checkStored
		if b.checkStored {
			if batch.toSeq == 0 {
				batch = spanOf(b.rows)
			}
			var err error
			if b.rows, err = f.withoutStored(ctx, b.rows, batch); err != nil {
				return struct{}{}, err
			}
		}
		if len(b.rows) > 0 && (b.rows[0].Seq <= verifyUntil || len(b.ids.unverified) > 0) {
			var err error
			if b.rows, err = f.withoutStoredIDs(ctx, b.rows, verifyUntil, b.ids.unverified); err != nil {
				return struct{}{}, err
			}
		}
		err := f.sink.InsertBatch(ctx, insertID, b.rows)
		if err == nil && retried {
			// An earlier attempt (or run) may have stored some of the
			// batch in the raw table and not in every rollup.
			err = f.completeViews(ctx, batch)
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
func (f *Flusher) startExpiry(ctx context.Context) (stop func()) {
	if f.opts.Registry == nil {
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
				f.expireShared(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// expireShared deletes the shared registry's ids older than the window, a
// batch at a time (every instance does it; they share the work).
func (f *Flusher) expireShared(ctx context.Context) {
	const batch = 10000
	for ctx.Err() == nil {
		n, err := f.opts.Registry.Expire(ctx, f.opts.Now(), batch)
		if err != nil {
			f.opts.Logger.Warn("ingest: expiring shared item ids failed; will retry", "error", err)
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
func (f *Flusher) ack(seq uint64) {
	if err := f.log.Ack(seq); err != nil {
		f.opts.Logger.Error("ingest: cannot acknowledge flushed records in the log; will retry", "seq", seq, "error", err)
	}
}
