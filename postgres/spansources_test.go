package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// TestSpanSources: marks are per MCP and resource, read back within the
// window, and throttled to one write a minute per key.
func TestSpanSources(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	ctx := context.Background()
	s := NewSpanSources(db)
	now := time.Now().Truncate(time.Microsecond)
	mcp := fmt.Sprintf("mcp-%d", now.UnixNano())

	if err := s.MarkSpanSources(ctx, mcp, []string{"r1", "r2"}, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.SpanSourcesSince(ctx, mcp, []string{"r1", "r2", "r3"}, now.Add(-24*time.Hour))
	if err != nil || len(got) != 2 || !got["r1"] || !got["r2"] {
		t.Fatalf("since a day ago: %v, %v", got, err)
	}
	if got, _ := s.SpanSourcesSince(ctx, "other-"+mcp, []string{"r1"}, now.Add(-24*time.Hour)); len(got) != 0 {
		t.Errorf("marks are per MCP: %v", got)
	}
	// Within a minute a mark is not written again, by this instance or
	// another one; after it, it is.
	other := NewSpanSources(db)
	for _, m := range []*SpanSources{s, other} {
		if err := m.MarkSpanSources(ctx, mcp, []string{"r1"}, now.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.SpanSourcesSince(ctx, mcp, []string{"r1"}, now.Add(time.Second)); len(got) != 0 {
		t.Errorf("re-marked within the minute: %v", got)
	}
	if err := other.MarkSpanSources(ctx, mcp, []string{"r1"}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SpanSourcesSince(ctx, mcp, []string{"r1", "r2"}, now.Add(time.Minute)); len(got) != 1 || !got["r1"] {
		t.Errorf("after two minutes: %v, want r1 only", got)
	}
	if got, err := s.SpanSourcesSince(ctx, mcp, nil, now); err != nil || len(got) != 0 {
		t.Errorf("no resources: %v, %v", got, err)
	}
}

// TestSpanSourcesOutage: with PostgreSQL hung, one statement waits at most
// its timeout; for the pause after it, span sources (and the sessions of
// the same instance, which share the pause) answer from memory without
// asking PostgreSQL, so no traces or metrics export waits on it.
func TestSpanSourcesOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := NewSpanSources(testDB(t)) // migrated; another instance's view
	db, proxy := openViaProxy(t)
	s := NewSpanSources(db)
	now := time.Now().Truncate(time.Microsecond)
	mcp := fmt.Sprintf("mcp-outage-%d", now.UnixNano())

	proxy.set("hung")
	begun := time.Now()
	if err := s.MarkSpanSources(ctx, mcp, []string{"r1"}, now); err == nil {
		t.Fatal("a mark through a hung PostgreSQL succeeded")
	}
	if d := time.Since(begun); d > fallbackTimeout+time.Second {
		t.Errorf("the first mark took %s, over its timeout", d)
	}
	// In the pause: no attempt, no error, the memory answers.
	begun = time.Now()
	if err := s.MarkSpanSources(ctx, mcp, []string{"r2"}, now); err != nil {
		t.Errorf("a mark in the pause: %v", err)
	}
	got, err := s.SpanSourcesSince(ctx, mcp, []string{"r1", "r2", "r3"}, now.Add(-time.Hour))
	if err != nil || len(got) != 2 || !got["r1"] || !got["r2"] {
		t.Errorf("from memory: %v, %v; want r1 and r2", got, err)
	}
	items := []analytics.Item{{ID: "x", Timestamp: now, UserID: "u"}}
	if err := NewAutoSessions(db).AssignSessions(ctx, mcp, items); err != nil || items[0].SessionID == "" {
		t.Errorf("sessions in the pause: %q, %v", items[0].SessionID, err)
	}
	if d := time.Since(begun); d > 200*time.Millisecond {
		t.Errorf("calls in the pause took %s: they asked PostgreSQL", d)
	}

	// Once the pause is over and PostgreSQL answers, marks are written.
	proxy.set("up")
	db.retryAt.Store(0)
	if err := s.MarkSpanSources(ctx, mcp, []string{"r3"}, now); err != nil {
		t.Fatal(err)
	}
	if got, err := direct.SpanSourcesSince(ctx, mcp, []string{"r1", "r2", "r3"}, now.Add(-time.Hour)); err != nil || len(got) != 1 || !got["r3"] {
		t.Errorf("stored after the outage: %v, %v; want r3 (r1 and r2 are marked by their next spans)", got, err)
	}
}
