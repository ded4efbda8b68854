package ingest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/wal"
)

// fakeRegistry is an analytics.IDRegistry of function fields.
type fakeRegistry struct {
	claim   func(mcpID string, ids []string) ([]string, error)
	expire  func(ctx context.Context) (int, error) // nil: nothing to delete
	mu      sync.Mutex
	settled []analytics.IDClaim
}

func (f *fakeRegistry) Claim(ctx context.Context, _, mcpID string, ids []string, _ time.Time, durable <-chan error) ([]string, error) {
	own, err := f.claim(mcpID, ids)
	if err != nil {
		return nil, err
	}
	select { // the registry commits once the log holds the payload
	case err := <-durable:
		return own, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakeRegistry) Settle(_ context.Context, _ string, recs []analytics.IDClaim) ([][]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled = append(f.settled, recs...)
	return make([][]string, len(recs)), nil
}

func (f *fakeRegistry) Expire(ctx context.Context, _ time.Time, _ int) (int, error) {
	if f.expire == nil {
		return 0, nil
	}
	return f.expire(ctx)
}

// nullSink stores nothing and answers that nothing is stored; with rows,
// it keeps the ids of the rows inserted.
type nullSink struct{ rows *idsInserted }

type idsInserted struct {
	mu  sync.Mutex
	ids []string
}

func (s nullSink) InsertBatch(_ context.Context, _ string, rows []analytics.StoredRow) error {
	if s.rows != nil {
		s.rows.mu.Lock()
		for _, r := range rows {
			s.rows.ids = append(s.rows.ids, r.Item.ID)
		}
		s.rows.mu.Unlock()
	}
	return nil
}

func (s *idsInserted) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.ids))
}
func (nullSink) InsertedSeqs(context.Context, string, uint64, uint64, time.Time, time.Time) (map[analytics.RecordDay]bool, error) {
	return nil, nil
}
func (nullSink) CompleteViews(context.Context, string, uint64, uint64, time.Time, time.Time) (int, error) {
	return 0, nil
}
func (nullSink) RecentIDs(context.Context, time.Time, func(string, string, time.Time)) error {
	return errors.New("must not be called with a shared registry")
}
func (nullSink) StoredIDs(context.Context, time.Time, map[string][]string, func(string, string, time.Time)) error {
	return errors.New("must not be called with a shared registry")
}

func sharedPipeline(t *testing.T, reg analytics.IDRegistry) *ingest.Pipeline {
	return sharedPipelineTo(t, reg, nullSink{}, time.Now)
}

func sharedPipelineTo(t *testing.T, reg analytics.IDRegistry, sink analytics.Sink, now func() time.Time) *ingest.Pipeline {
	t.Helper()
	l, err := wal.Open(t.TempDir(), wal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := ingest.New(l, sink, ingest.Options{Node: "n", DedupWindow: 24 * time.Hour, FlushInterval: 100 * time.Millisecond,
		FlushMaxRows: 1000, RateLimitPerMinute: 1000, Registry: reg, Now: now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		l.Close()
	})
	return p
}

func itemsWithIDs(ids ...string) []analytics.Item {
	items := make([]analytics.Item, len(ids))
	for i, id := range ids {
		items[i] = analytics.Item{ID: id, Timestamp: time.Now(), SessionID: "s", Method: "ping", Status: "ok"}
	}
	return items
}

// The registry decides: ids it has seen elsewhere are dropped (and not kept
// in this instance's cache), ids it grants are accepted and then cached.
func TestSharedRegistryDecides(t *testing.T) {
	var calls [][]string
	reg := &fakeRegistry{claim: func(_ string, ids []string) ([]string, error) {
		calls = append(calls, slices.Clone(ids))
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "elsewhere" }), nil
	}}
	p := sharedPipeline(t, reg)
	ctx := context.Background()
	acc, dropped, err := p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "elsewhere", "b"), 0)
	if err != nil || acc != 2 || dropped != 1 {
		t.Fatalf("Ingest = %d accepted, %d dropped, %v; want 2, 1", acc, dropped, err)
	}
	// a is cached: not asked again; elsewhere is not: asked again.
	if _, _, err := p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "elsewhere"), 0); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a", "elsewhere", "b"}, {"elsewhere"}}; !slices.EqualFunc(calls, want, slices.Equal) {
		t.Fatalf("registry asked %v, want %v", calls, want)
	}
}

// A registry failure refuses the payload with 503 (not accepted without
// the shared check) and, for a second, refuses the next payloads before
// they reach the log; the failed payload's record, in the log already, is
// settled by the flusher before it stores anything, and the retry is
// accepted.
func TestSharedRegistryFailureRefuses(t *testing.T) {
	var mu sync.Mutex
	fail, claims := true, 0
	reg := &fakeRegistry{claim: func(_ string, ids []string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		claims++
		if fail {
			return nil, errors.New("postgres is down")
		}
		return ids, nil
	}}
	clock := time.Now()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	stored := &idsInserted{}
	p := sharedPipelineTo(t, reg, nullSink{rows: stored}, now)
	ctx := context.Background()
	// An item without an id rides along: no claim protects it from the
	// retry, so the refused payload's copy must not be stored.
	_, _, err := p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "b", ""), 0)
	if telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE {
		t.Fatalf("Ingest with the registry down: %v, want unavailable", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	_, _, err = p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "b"), 0)
	mu.Lock()
	n := claims
	mu.Unlock()
	if telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE || n != 1 {
		t.Fatalf("Ingest right after the failure: %v after %d claims, want unavailable without a claim", err, n)
	}
	mu.Lock()
	clock = clock.Add(1100 * time.Millisecond)
	mu.Unlock()
	if acc, _, err := p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "b", ""), 0); err != nil || acc != 3 {
		t.Fatalf("retry = %d, %v; want all three accepted", acc, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(stored.get()) < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	reg.mu.Lock()
	settled := slices.Clone(reg.settled)
	reg.mu.Unlock()
	if len(settled) != 1 || settled[0].Seq != 1 || !slices.Equal(settled[0].IDs, []string{"a", "b"}) {
		t.Fatalf("settled %+v, want the refused payload's record (seq 1: a, b) only", settled)
	}
	// The fake settles every id to both records; the registry would give
	// each to one (TestIngestIDsSettle).
	time.Sleep(200 * time.Millisecond) // two more flush intervals: nothing else comes
	if got := stored.get(); !slices.Equal(got, []string{"", "a", "a", "b", "b"}) {
		t.Fatalf("stored %v, want the id-less item once (the retry's)", got)
	}
}

// The ids a claim finds accepted by another record are answered as
// duplicates and left out of the insert, though the record holds them.
func TestSharedClaimLostLeftOut(t *testing.T) {
	reg := &fakeRegistry{claim: func(_ string, ids []string) ([]string, error) {
		return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "elsewhere" }), nil
	}}
	stored := &idsInserted{}
	p := sharedPipelineTo(t, reg, nullSink{rows: stored}, time.Now)
	acc, dropped, err := p.Ingest(context.Background(), "acct", "mcp", itemsWithIDs("a", "elsewhere", "b"), 0)
	if err != nil || acc != 2 || dropped != 1 {
		t.Fatalf("Ingest = %d, %d, %v; want 2 accepted, 1 dropped", acc, dropped, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(stored.get()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // two more flush intervals: nothing else comes
	if got := stored.get(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v, want a and b only", got)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(reg.settled) != 0 {
		t.Fatalf("settled %v: the claim's outcome was known", reg.settled)
	}
}

// A key that keeps sending payloads refused whole is refused 429 before its
// bodies are read, with the wait in Retry-After; other keys are not.
func TestRefusedPayloadsLimit(t *testing.T) {
	l, err := wal.Open(t.TempDir(), wal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := ingest.New(l, nullSink{}, ingest.Options{RateLimitPerMinute: 600, RefusedPerMinute: 2})
	for i := range 2 {
		if err := p.Allow("bad"); err != nil {
			t.Fatalf("payload %d of the key before its refusals ran out: %v", i, err)
		}
		p.Refused("bad")
	}
	err = p.Allow("bad")
	var te *telemetry.Error
	if !errors.As(err, &te) || te.Code != telemetry.ERATELIMITED || te.RetryAfter < 1 || te.RetryAfter > 30 {
		t.Fatalf("third payload after two refusals: %v, want rate_limited with Retry-After <= 30 s", err)
	}
	if err := p.Allow("good"); err != nil {
		t.Fatalf("another key: %v", err)
	}
	// Without the limit, refusals cost nothing more.
	q := ingest.New(l, nullSink{}, ingest.Options{RateLimitPerMinute: 600})
	for range 5 {
		q.Refused("bad")
	}
	if err := q.Allow("bad"); err != nil {
		t.Fatalf("RefusedPerMinute 0: %v", err)
	}
}

// A slow expiry of the shared registry (a sweep of its whole table) does
// not hold up the flusher: items are stored while it runs, and it ends
// when the pipeline stops.
func TestSharedExpiryDoesNotHoldFlushes(t *testing.T) {
	defer ingest.SetExpireEvery(10 * time.Millisecond)()
	expiring := make(chan struct{})
	var once sync.Once
	reg := &fakeRegistry{
		claim: func(_ string, ids []string) ([]string, error) { return ids, nil },
		expire: func(ctx context.Context) (int, error) {
			once.Do(func() { close(expiring) })
			<-ctx.Done() // as long as the pipeline runs
			return 0, ctx.Err()
		},
	}
	stored := &idsInserted{}
	p := sharedPipelineTo(t, reg, nullSink{rows: stored}, time.Now)
	select {
	case <-expiring:
	case <-time.After(5 * time.Second):
		t.Fatal("the registry's expiry never ran")
	}
	if _, _, err := p.Ingest(context.Background(), "acct", "mcp", itemsWithIDs("a", "b"), 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(stored.get()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := stored.get(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v while the expiry ran, want a and b", got)
	}
}
