package probe

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/postgres"
)

// RunStore is the schedule (postgres.ProbeStore).
type RunStore interface {
	Claim(ctx context.Context, owner string, limit int, margin time.Duration) ([]postgres.DueProbe, error)
	Record(ctx context.Context, owner, probeID string, c alerting.ProbeCheck, next time.Time) (bool, error)
}

// ResultSink stores results (clickhouse.Sink) and drops old ones
// (clickhouse.Lifecycle).
type ResultSink interface {
	InsertProbeResults(ctx context.Context, rows []clickhouse.ProbeResultRow) error
}

// Runner runs the due checks of every probe, on every instance: each
// poll it claims due probes under a lease (postgres.ProbeStore.Claim, as
// the outbox claims deliveries), checks them, records the outcome and the
// next run (at the probe's own phase within its interval, NextRun, so
// that the checks spread over the interval), buffers the
// results for the metrics store and feeds the tool inventory with the
// tools/list answers. An instance that dies mid-check leaves a lease that
// ends a few seconds after the probe's timeout; another instance then
// runs the probe.
type Runner struct {
	Store     RunStore
	Results   ResultSink
	Inventory analytics.InventoryService
	Checker   *Checker
	// Owner names this instance in leases.
	Owner string
	// Concurrency bounds the checks in flight (default 64).
	Concurrency int
	// Poll is how often due probes are looked for (default 1 s).
	Poll time.Duration
	// IntervalOverride, when positive, replaces every probe's interval:
	// a test-only knob (probes.test_interval), never for production.
	IntervalOverride time.Duration
	// FlushEvery bounds how long results wait for the metrics store
	// (default 2 s).
	FlushEvery time.Duration
	Log        *slog.Logger
	// OnCheck, when set, sees every check recorded (tests, metrics).
	OnCheck func(d postgres.DueProbe, c alerting.ProbeCheck)

	mu      sync.Mutex
	pending []clickhouse.ProbeResultRow
}

// leaseMargin is how much longer than a probe's timeout its lease lasts.
const leaseMargin = 10 * time.Second

// maxPending bounds the results kept while the metrics store is down.
const maxPending = 50000

// Run checks due probes until ctx ends, then lets the checks in flight
// finish and flushes their results.
func (r *Runner) Run(ctx context.Context) error {
	conc := r.Concurrency
	if conc <= 0 {
		conc = 64
	}
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	flushEvery := r.FlushEvery
	if flushEvery <= 0 {
		flushEvery = 2 * time.Second
	}
	slots := make(chan struct{}, conc)
	var wg sync.WaitGroup
	tick := time.NewTicker(poll)
	defer tick.Stop()
	// Results go to the metrics store on their own goroutine, so a slow
	// or unreachable store never holds up the checks.
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		ft := time.NewTicker(flushEvery)
		defer ft.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ft.C:
				r.flush(ctx)
			}
		}
	}()
	for {
		if free := conc - len(slots); free > 0 {
			due, err := r.Store.Claim(ctx, r.Owner, free, leaseMargin)
			if err != nil && ctx.Err() == nil {
				r.Log.Warn("probes: claim failed", "error", err)
			}
			for _, d := range due {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-slots; wg.Done() }()
					r.run(context.WithoutCancel(ctx), d)
				}()
			}
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			<-flushed
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r.flush(fctx)
			cancel()
			return nil
		case <-tick.C:
		}
	}
}

// run checks one claimed probe and records it.
func (r *Runner) run(ctx context.Context, d postgres.DueProbe) {
	c := r.Checker.Check(ctx, Target{URL: d.URL, Headers: d.Headers, Timeout: d.Timeout})
	interval := d.Interval
	if r.IntervalOverride > 0 {
		interval = r.IntervalOverride
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ok, err := r.Store.Record(rctx, r.Owner, d.ID, c, NextRun(d.ID, c.At, time.Now(), interval))
	if err != nil {
		r.Log.Warn("probes: record failed", "probe", d.ID, "error", err)
		return
	}
	if !ok {
		return // deleted meanwhile, or the lease was lost: another run counts
	}
	r.mu.Lock()
	if len(r.pending) >= maxPending {
		r.pending = r.pending[1:]
	}
	r.pending = append(r.pending, clickhouse.ProbeResultRow{AccountID: d.AccountID, MCPID: d.MCPID, ProbeID: d.ID, Check: c})
	r.mu.Unlock()
	if r.OnCheck != nil {
		r.OnCheck(d, c)
	}
	if c.OK && r.Inventory != nil {
		rep := analytics.InventoryReport{ServerVersion: c.ServerVersion, ProtocolVersion: c.ProtocolVersion, Source: analytics.InventorySourceProbe,
			Tools: make([]analytics.InventoryReportTool, 0, len(c.Tools))}
		for _, t := range c.Tools {
			rep.Tools = append(rep.Tools, analytics.InventoryReportTool{Name: t.Name, SchemaHash: t.SchemaHash})
		}
		if rep.Validate() == nil {
			if _, err := r.Inventory.RecordInventory(rctx, d.MCPID, c.At, rep); err != nil {
				r.Log.Warn("probes: inventory not recorded", "probe", d.ID, "error", err)
			}
		}
	}
}

// flush writes the buffered results; on failure they stay for the next
// flush (up to maxPending).
func (r *Runner) flush(ctx context.Context) {
	r.mu.Lock()
	rows := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	if err := r.Results.InsertProbeResults(ctx, rows); err != nil {
		r.Log.Warn("probes: results not stored yet", "rows", len(rows), "error", err)
		r.mu.Lock()
		r.pending = append(rows, r.pending...)
		if n := len(r.pending) - maxPending; n > 0 {
			r.pending = r.pending[n:]
		}
		r.mu.Unlock()
	}
}

// NextRun is when the probe id, whose check started at started and was
// recorded at now, runs next: at its own phase within the interval (an
// offset derived from its id, so that probes created together, or
// overdue together after an outage, spread over the interval instead of
// running in a burst each time; a fixed jitter), at least half an
// interval after this check started (never twice in a row), and never in
// the past: a probe whose checks fell behind runs once at its next phase,
// not once per missed interval. In steady state a probe runs exactly one
// interval after its last check was due, wherever the check started
// within the poll and however long it took.
func NextRun(id string, started, now time.Time, interval time.Duration) time.Time {
	if interval <= 0 {
		return now
	}
	from := started.Add(interval / 2)
	if from.Before(now) {
		from = now
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	phase := int64(h.Sum64() % uint64(interval))
	// The first instant at or after from whose offset in the interval,
	// counted from the Unix epoch, is the phase.
	off := (from.UnixNano() - phase) % int64(interval)
	if off < 0 {
		off += int64(interval)
	}
	if off == 0 {
		return from
	}
	return from.Add(interval - time.Duration(off))
}
