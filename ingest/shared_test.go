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

// fakeRegistry is an ingest.IDRegistry of function fields.
type fakeRegistry struct {
	reserve func(mcpID string, ids []string) ([]string, error)
	mu      sync.Mutex
	release [][]string
}

func (f *fakeRegistry) Reserve(_ context.Context, mcpID string, ids []string, _ time.Time) ([]string, []string, error) {
	fresh, err := f.reserve(mcpID, ids)
	return fresh, nil, err
}

func (f *fakeRegistry) Confirm(_ context.Context, _ string, ids []string, _ time.Time) ([]string, error) {
	return ids, nil
}

func (f *fakeRegistry) Release(_ context.Context, _ string, ids []string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.release = append(f.release, slices.Clone(ids))
	return nil
}

func (f *fakeRegistry) Expire(context.Context, time.Time, int) (int, error) { return 0, nil }

// nullSink stores nothing and answers that nothing is stored.
type nullSink struct{}

func (nullSink) InsertRows(context.Context, []analytics.StoredRow) error { return nil }
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

func sharedPipeline(t *testing.T, reg ingest.IDRegistry) *ingest.Pipeline {
	t.Helper()
	l, err := wal.Open(t.TempDir(), wal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := ingest.New(l, nullSink{}, ingest.Options{Node: "n", DedupWindow: 24 * time.Hour, FlushInterval: 100 * time.Millisecond,
		FlushMaxRows: 1000, RateLimitPerMinute: 1000, Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	reg := &fakeRegistry{reserve: func(_ string, ids []string) ([]string, error) {
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

// A registry failure refuses the payload with 503 and undoes everything,
// so the retry is accepted.
func TestSharedRegistryFailureRefuses(t *testing.T) {
	fail := true
	reg := &fakeRegistry{reserve: func(_ string, ids []string) ([]string, error) {
		if fail {
			return nil, errors.New("postgres is down")
		}
		return ids, nil
	}}
	p := sharedPipeline(t, reg)
	ctx := context.Background()
	_, _, err := p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "b"), 0)
	if telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE {
		t.Fatalf("Ingest with the registry down: %v, want unavailable", err)
	}
	if len(reg.release) != 1 || !slices.Equal(reg.release[0], []string{"a", "b"}) {
		t.Fatalf("released %v, want the failed reservation undone", reg.release)
	}
	fail = false
	if acc, _, err := p.Ingest(ctx, "acct", "mcp", itemsWithIDs("a", "b"), 0); err != nil || acc != 2 {
		t.Fatalf("retry = %d, %v; want both accepted", acc, err)
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
