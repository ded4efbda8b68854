// Package ingest is the durable ingest path: validated items are written to
// the write-ahead log and fsynced before the client hears 202; a flusher
// sends them to ClickHouse in large batches and frees the log only after
// ClickHouse acknowledged every row. Duplicate item ids are dropped within
// the contract's 24 h window, across restarts and log replays.
package ingest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/wal"
)

// Options configure a Pipeline.
type Options struct {
	Node               string // this instance's id; each instance has its own log
	RateLimitPerMinute int    // payloads per ingest key per minute
	// RefusedPerMinute is how many payloads refused whole (malformed, too
	// large, too many items, wrong type) a key may send per minute; past
	// it the key's payloads are refused 429 before their body is read.
	// 0: no such limit.
	RefusedPerMinute int
	DedupWindow      time.Duration // 24 h by contract
	// DedupExactIDs bounds the in-memory duplicate filter without a
	// Registry: about this many recent ids are kept exactly, older ones in
	// a filter of DedupFilterBytes, and ClickHouse is asked when it says
	// "maybe" (docs/exactly-once.md, "Bounded memory"). 0: every id of the
	// window is kept exactly (memory grows with the ids).
	DedupExactIDs    int
	DedupFilterBytes int
	FlushInterval    time.Duration // flush at least this often
	FlushMaxRows     int           // or when this many rows wait
	Logger           *slog.Logger
	Metrics          *Metrics // optional
	Now              func() time.Time
	// Registry, when set, is the authority on duplicates across instances;
	// the in-memory filter then keeps at most CacheMaxIDs ids (default
	// DefaultCacheMaxIDs) and start-up loads nothing from ClickHouse.
	Registry    analytics.IDRegistry
	CacheMaxIDs int
	// Sessions derives the sessions of items sent without one; nil leaves
	// their session_id empty.
	Sessions analytics.SessionAssigner
	// RedactionBudget is the CPU time redaction may spend per MiB of a
	// payload's decoded body (Accept; default DefaultRedactionBudget).
	RedactionBudget time.Duration
	// Failpoint, when set, is called at named points of Ingest
	// ("after-append": the payload is in the log, its claim not
	// committed; "after-claim": committed, not answered): the crash tests
	// kill the process there (cmd/telemetryd, TELEMETRY_TEST_FAILPOINT).
	Failpoint func(point string)
}

// DefaultCacheMaxIDs bounds the in-memory filter in front of a Registry:
// about 20 bytes an id, so 80 MiB.
const DefaultCacheMaxIDs = 4 << 20

// registryTimeout bounds one call to the Registry. It is not the request's
// context: a claim a cancelled client no longer waits for is still
// answered, so the flusher knows which items its record owns.
const registryTimeout = 10 * time.Second

// Pipeline is the ingest path: its Acceptor takes payloads into the log
// (request to durable log), its Flusher sends the log to the sink (log to
// ClickHouse). They share the duplicate filter and the outcomes of the
// records' shared claims.
type Pipeline struct {
	*Acceptor
	*Flusher
	c *core
}

// core is what the acceptor and the flusher share.
type core struct {
	opts  Options
	log   *wal.Log
	dedup *Dedup

	ready chan struct{} // closed once the ids still in the log are in dedup
	node  string        // Options.Node and the log's identity: the records' key in ClickHouse

	// loaded is set once dedup also holds the ids already in ClickHouse.
	// Until then, Ingest holds loadMu for reading across its reservation
	// and append, so that Run knows which records were accepted against an
	// incomplete filter: their ids are checked against ClickHouse at flush.
	loaded atomic.Bool
	loadMu sync.RWMutex

	// claims holds the outcome of the shared claims of this run's records
	// not flushed yet, by sequence number: the flusher waits for a
	// record's outcome, leaves out the ids it does not own, and settles
	// the records whose claim failed. settledThrough: the flusher is past
	// these records (a late outcome is not kept).
	claimMu        sync.Mutex
	claims         map[uint64]claimOutcome
	claimSignal    chan struct{} // closed (and replaced) when an outcome is added
	settledThrough uint64
	// lastAt: the latest receipt given to a record (Unix nanoseconds);
	// receipts are unique per log, since with the node they name the
	// owner of the record's ids in the registry.
	lastAt atomic.Int64
	// (the flusher's start seeds it from the log).
}

// Acceptor takes payloads into the log: rate limits, the duplicate
// filter's reservation, derived sessions, the shared claim, and the
// append that answers once the log holds the record on disk.
type Acceptor struct {
	*core
	limiter *RateLimiter
	refused *RateLimiter // nil without Options.RefusedPerMinute
	bufPool sync.Pool
	// registryDownUntil (unix nanoseconds): a claim failed just before;
	// payloads are refused before they reach the log until then.
	registryDownUntil atomic.Int64
}

// Flusher sends the log's records to the sink in batches, exactly once,
// and frees the log behind them (Run).
type Flusher struct {
	*core
	sink analytics.Sink
}

// claimOutcome is how a record's claim ended: the ids it does not own, or
// unsettled when the registry did not answer. refused: the payload was
// answered 503, so its items without an id (which no claim protects from
// the client's retry) are not stored.
type claimOutcome struct {
	lost      map[string]bool
	unsettled bool
	refused   bool
}

// New returns a pipeline over an open log. Call Run to flush.
func New(l *wal.Log, sink analytics.Sink, opts Options) *Pipeline {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RedactionBudget <= 0 {
		opts.RedactionBudget = DefaultRedactionBudget
	}
	node := opts.Node
	if id := l.ID(); id != "" {
		node += "/" + id
	}
	c := &core{
		opts: opts, log: l, node: node,
		dedup:  NewDedup(opts.DedupWindow),
		ready:  make(chan struct{}),
		claims: map[uint64]claimOutcome{}, claimSignal: make(chan struct{}),
	}
	p := &Pipeline{c: c, Acceptor: &Acceptor{core: c, limiter: NewRateLimiter(opts.RateLimitPerMinute)},
		Flusher: &Flusher{core: c, sink: sink}}
	if opts.RefusedPerMinute > 0 {
		p.refused = NewRateLimiter(opts.RefusedPerMinute)
	}
	if opts.Registry == nil && opts.DedupExactIDs > 0 {
		c.dedup.Limit(opts.DedupExactIDs, max(opts.DedupFilterBytes, 1<<20))
	}
	if opts.Registry != nil {
		if opts.CacheMaxIDs <= 0 {
			opts.CacheMaxIDs = DefaultCacheMaxIDs
		}
		c.opts = opts
		c.dedup.Bound(opts.CacheMaxIDs)
		c.loaded.Store(true) // the registry is complete: nothing to load
	}
	return p
}

// Allow applies the per-key rate limit before the body is even read.
func (a *Acceptor) Allow(keyID string) error {
	if a.refused != nil {
		if out, wait := a.refused.Exhausted(keyID, a.opts.Now()); out {
			return &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: telemetry.RetryAfterSeconds(wait),
				Message: "This ingest key sent more payloads that were refused whole (malformed, too large, too many items) this minute than its limit allows; fix the client and retry after the Retry-After delay."}
		}
	}
	ok, wait := a.limiter.Allow(keyID, a.opts.Now())
	if ok {
		return nil
	}
	return &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: telemetry.RetryAfterSeconds(wait),
		Message: "This ingest key sent more payloads this minute than its limit allows; retry after the Retry-After delay."}
}

// Refused counts a payload of keyID that was refused whole against its
// allowance of such payloads (Options.RefusedPerMinute).
func (a *Acceptor) Refused(keyID string) {
	if a.refused != nil {
		a.refused.Allow(keyID, a.opts.Now())
	}
}

// Ingest makes the valid items of one payload durable and reports how many
// were accepted; duplicates of ids accepted within the window are dropped
// (counted with the invalid items the caller already dropped). The derived
// sessions (Options.Sessions) may be written into items in place.
func (a *Acceptor) Ingest(ctx context.Context, accountID, mcpID string, items []analytics.Item, dropped int) (accepted, totalDropped int, err error) {
	select {
	case <-a.ready:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	if !a.loaded.Load() {
		a.loadMu.RLock()
		defer a.loadMu.RUnlock()
	}
	now := a.opts.Now()
	if err := a.registryDown(now); err != nil {
		return 0, 0, err
	}
	if a.opts.Registry != nil {
		now = a.uniqueReceipt(now)
	}
	kept, reserved, unverified, dup := a.reserveLocal(mcpID, items, now)
	dropped += dup
	if len(kept) == 0 {
		return 0, dropped, nil
	}
	if a.opts.Sessions != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registryTimeout)
		err := a.opts.Sessions.AssignSessions(sctx, mcpID, kept)
		cancel()
		if err != nil {
			a.releaseLocal(mcpID, reserved)
			return 0, 0, &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 5, Err: err,
				Message: "Sessions cannot be given to items sent without a session_id right now; the payload was not accepted. Retry after the Retry-After delay."}
		}
	}
	rec := Record{AccountID: accountID, MCPID: mcpID, ReceivedAt: now.UTC(), Items: kept, Unverified: unverified}
	if a.opts.Registry != nil {
		lost, err := a.appendClaimed(ctx, rec, reserved)
		if err != nil {
			a.releaseLocal(mcpID, reserved)
			return 0, 0, err
		}
		accepted, dropped = len(kept)-lost, dropped+lost
		a.opts.Metrics.accepted(accepted, dropped)
		return accepted, dropped, nil
	}
	if _, err := a.appendRecord(ctx, rec); err != nil {
		a.releaseLocal(mcpID, reserved)
		return 0, 0, a.appendError(err)
	}
	accepted = len(kept)
	a.opts.Metrics.accepted(accepted, dropped)
	return accepted, dropped, nil
}

// reserveLocal reserves the ids of items in the duplicate filter and
// returns the items kept (those without an id or with an id reserved
// now), the ids reserved, the indices in kept of those reserved while the
// filter said "maybe", and the count of duplicates dropped. kept is items
// itself while none is dropped (the common case costs no copy), else a
// copy: items is never rearranged.
func (a *Acceptor) reserveLocal(mcpID string, items []analytics.Item, now time.Time) (kept []analytics.Item, reserved []string, unverified []int, dropped int) {
	ids := make([]string, 0, len(items))
	for i := range items {
		if items[i].ID != "" {
			ids = append(ids, items[i].ID)
		}
	}
	if len(ids) == 0 {
		return items, nil, nil, 0
	}
	answers := make([]bool, 2*len(ids))
	admitted, maybe := answers[:len(ids)], answers[len(ids):]
	a.dedup.AdmitAll(mcpID, ids, now, admitted, maybe)
	kept, reserved = items, ids[:0] // the admitted ids, in place
	j := 0
	for i := range items {
		if id := items[i].ID; id != "" {
			ok, unsure := admitted[j], maybe[j]
			j++
			if !ok {
				if dropped == 0 {
					kept = append(make([]analytics.Item, 0, len(items)-1), items[:i]...)
				}
				dropped++
				continue
			}
			if unsure {
				unverified = append(unverified, i-dropped)
			}
			reserved = append(reserved, id)
		}
		if dropped > 0 {
			kept = append(kept, items[i])
		}
	}
	return kept, reserved, unverified, dropped
}

// releaseLocal releases the ids reserved by reserveLocal.
func (a *Acceptor) releaseLocal(mcpID string, reserved []string) {
	for _, id := range reserved {
		a.dedup.Release(mcpID, id)
	}
}

// appendRecord appends rec to the log and returns its sequence number.
func (a *Acceptor) appendRecord(ctx context.Context, rec Record) (uint64, error) {
	buf, _ := a.bufPool.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	*buf = rec.Encode((*buf)[:0])
	// Append answers only once the record is on disk or definitely not in
	// the log (a cancelled request does not cut it short), so the ids are
	// released exactly when the items were not accepted.
	seq, _, err := a.log.Append(ctx, *buf)
	a.bufPool.Put(buf)
	return seq, err
}

// appendError is the error Ingest answers for the log's refusal err.
func (a *Acceptor) appendError(err error) error {
	if errors.Is(err, wal.ErrFull) {
		a.opts.Metrics.full()
		return &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 30,
			Message: "Storage is catching up; the payload was not accepted. Retry after the Retry-After delay."}
	}
	if errors.Is(err, wal.ErrWrite) {
		return &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 5, Err: err,
			Message: "The service cannot write its log right now (disk full or I/O error); the payload was not accepted. Retry after the Retry-After delay."}
	}
	return err
}

func (a *Acceptor) failpoint(point string) {
	if a.opts.Failpoint != nil {
		a.opts.Failpoint(point)
	}
}

// registryDown refuses a payload before it reaches the log while the
// shared registry just failed: during an outage, clients' retries would
// otherwise pile up in the log as records to settle.
func (a *Acceptor) registryDown(now time.Time) error {
	if a.opts.Registry == nil || now.UnixNano() >= a.registryDownUntil.Load() {
		return nil
	}
	return &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 5,
		Message: "The shared duplicate filter is unavailable; the payload was not accepted. Retry after the Retry-After delay."}
}

// uniqueReceipt returns now, or just after the previous record's receipt
// when now is not after it.
func (a *Acceptor) uniqueReceipt(now time.Time) time.Time {
	for {
		last, ns := a.lastAt.Load(), now.UnixNano()
		if ns <= last {
			ns = last + 1
		}
		if a.lastAt.CompareAndSwap(last, ns) {
			return time.Unix(0, ns)
		}
	}
}

// appendClaimed appends rec to the log while the registry claims its ids
// for it, committing the claim once the log holds the record, and
// returns how many of the ids another record accepted within the window
// before (left out at flush, counted as duplicates). When the registry
// cannot answer, the payload is refused (503: not accepted without the
// shared check); its record stays in the log and the flusher settles it,
// storing the items no other record owns by then, so the client's retry,
// here or elsewhere, is stored once. When the log refuses rec, nothing is
// claimed.
func (a *Acceptor) appendClaimed(ctx context.Context, rec Record, ids []string) (lost int, err error) {
	type claimed struct {
		own []string
		err error
	}
	var done chan claimed
	durable := make(chan error, 1)
	if len(ids) > 0 {
		done = make(chan claimed, 1)
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registryTimeout)
			defer cancel()
			own, err := a.opts.Registry.Claim(rctx, a.node, rec.MCPID, ids, rec.ReceivedAt, durable)
			done <- claimed{own, err}
		}()
	}
	seq, aerr := a.appendRecord(ctx, rec)
	if aerr == nil {
		a.failpoint("after-append")
	}
	durable <- aerr
	var out claimOutcome
	if done != nil {
		c := <-done
		switch {
		case aerr != nil:
			// Not in the log: the claim was rolled back, or never made.
		case c.err != nil:
			out.unsettled, out.refused = true, true
			err = &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 5, Err: c.err,
				Message: "The shared duplicate filter is unavailable; the payload was not accepted. Retry after the Retry-After delay."}
			a.registryDownUntil.Store(a.opts.Now().Add(time.Second).UnixNano())
		case len(c.own) < len(ids):
			out.lost = make(map[string]bool, len(ids)-len(c.own))
			for _, id := range ids {
				out.lost[id] = true
			}
			for _, id := range c.own {
				delete(out.lost, id)
			}
			for id := range out.lost {
				// Not cached as this instance's: its window runs from its
				// first receipt, which the registry knows and this cache
				// does not.
				a.dedup.Release(rec.MCPID, id)
			}
			lost = len(out.lost)
		}
	}
	if aerr != nil {
		return 0, a.appendError(aerr)
	}
	a.claimMu.Lock()
	if seq > a.settledThrough {
		a.claims[seq] = out
		close(a.claimSignal)
		a.claimSignal = make(chan struct{})
	}
	a.claimMu.Unlock()
	if err == nil {
		a.failpoint("after-claim")
	}
	return lost, err
}

// Ready reports whether the pipeline accepts payloads (the ids waiting in
// the log are in the duplicate filter; ClickHouse need not be up).
func (p *Pipeline) Ready() bool {
	select {
	case <-p.c.ready:
		return true
	default:
		return false
	}
}

// DedupStats report the duplicate filter's size.
func (p *Pipeline) DedupStats() DedupStats { return p.c.dedup.Stats() }

// LogHealth is the write-ahead log's health check: the last write failure,
// nil when the last write succeeded.
func (p *Pipeline) LogHealth(context.Context) error { return p.c.log.Health() }

// Stats describe the log backlog.
func (p *Pipeline) Stats() wal.Stats { return p.c.log.Stats() }

// WaitFlushed returns once every record this instance's log took before
// through is in the sink (acknowledged), or with ctx's error. Deleting a
// person's data waits so first: an item of theirs accepted just before the
// request may still be in the log, and a mutation changes only the rows
// already stored.
func (p *Pipeline) WaitFlushed(ctx context.Context, through time.Time) error {
	for {
		if st := p.c.log.Stats(); st.OldestUnacked.IsZero() || st.OldestUnacked.After(through) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
