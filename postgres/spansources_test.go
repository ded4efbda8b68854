package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestSpanSources: marks are per MCP and resource, read back within the
// window, and throttled to one write a minute per key.
func TestSpanSources(t *testing.T) {
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
