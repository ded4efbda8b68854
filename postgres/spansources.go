package postgres

import (
	"context"
	"sync"
	"time"
)

// SpanSources records which OTLP emitters (resource keys, otlp.ResourceKey)
// sent MCP spans to an MCP and when, for the OTLP metrics path's "spans win"
// rule (otlp/MAPPING.md, "Metrics"). Writes are throttled: a key is written
// at most once per MarkEvery per instance (and the statement skips rows
// written less than MarkEvery ago, across instances), which is plenty for a
// 24-hour window.
//
// While PostgreSQL is unreachable, the instance answers from its own memory
// of the spans it received (seen): metric points are then skipped only for
// the emitters whose spans reached this instance, rather than refused. An
// outage found by any store with a fallback (DB.tryOrFallBack) spares the
// others the attempt for a pause.
type SpanSources struct {
	db *DB

	mu        sync.Mutex
	marked    map[spanSourceKey]time.Time // last written, this instance
	seen      map[spanSourceKey]time.Time // last span received, this instance
	lastPrune time.Time
}

type spanSourceKey struct{ mcpID, resource string }

// Span source bookkeeping.
const (
	// MarkEvery is the most often a key's last_span_at is written.
	MarkEvery = time.Minute
	// spanSourcesKeep is how long a row is kept after its last span: past
	// the 24-hour window it no longer matters.
	spanSourcesKeep = 72 * time.Hour
	// maxMarked bounds the instance's memory of written keys; past it the
	// memory starts over (the statement still throttles).
	maxMarked = 100_000
)

// NewSpanSources returns the span source registry on db.
func NewSpanSources(db *DB) *SpanSources {
	return &SpanSources{db: db, marked: map[spanSourceKey]time.Time{}, seen: map[spanSourceKey]time.Time{}}
}

// MarkSpanSources records that the resources sent MCP spans to mcpID at now.
// Keys written less than MarkEvery ago are skipped; once an hour the rows
// past their use are deleted.
func (s *SpanSources) MarkSpanSources(ctx context.Context, mcpID string, resources []string, now time.Time) error {
	var due []string
	s.mu.Lock()
	if len(s.seen)+len(resources) > maxMarked {
		s.seen = map[spanSourceKey]time.Time{}
	}
	for _, r := range resources {
		if at, ok := s.seen[spanSourceKey{mcpID, r}]; !ok || at.Before(now) {
			s.seen[spanSourceKey{mcpID, r}] = now
		}
		if at, ok := s.marked[spanSourceKey{mcpID, r}]; !ok || now.Sub(at) >= MarkEvery || now.Before(at) {
			due = append(due, r)
		}
	}
	prune := now.Sub(s.lastPrune) >= time.Hour
	if prune {
		s.lastPrune = now
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	err := s.db.tryOrFallBack(ctx, fallbackTimeout, fallbackPause, func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `
			INSERT INTO otlp_span_sources (mcp_id, resource_hash, last_span_at)
			SELECT $1, u, $3 FROM unnest($2::text[]) AS u ORDER BY u
			ON CONFLICT (mcp_id, resource_hash) DO UPDATE SET last_span_at = EXCLUDED.last_span_at
				WHERE otlp_span_sources.last_span_at < EXCLUDED.last_span_at - $4::bigint * interval '1 millisecond'`,
			mcpID, due, now, MarkEvery.Milliseconds())
		return wrap(err)
	})
	if err == errPaused {
		return nil // an outage already reported: the next export after it marks
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.marked)+len(due) > maxMarked {
		s.marked = map[spanSourceKey]time.Time{}
	}
	for _, r := range due {
		s.marked[spanSourceKey{mcpID, r}] = now
	}
	s.mu.Unlock()
	if prune {
		_, err = s.db.Pool.Exec(ctx, `
			DELETE FROM otlp_span_sources WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM otlp_span_sources WHERE last_span_at < $1 LIMIT 10000))`, now.Add(-spanSourcesKeep))
		return wrap(err)
	}
	return nil
}

// SpanSourcesSince returns which of the resources sent MCP spans to mcpID
// at or after since. While PostgreSQL cannot answer, the instance's own
// memory does (the spans this instance received), and the failure is
// logged.
func (s *SpanSources) SpanSourcesSince(ctx context.Context, mcpID string, resources []string, since time.Time) (map[string]bool, error) {
	out := map[string]bool{}
	if len(resources) == 0 {
		return out, nil
	}
	var ids []string
	err := s.db.tryOrFallBack(ctx, fallbackTimeout, fallbackPause, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `
			SELECT resource_hash FROM otlp_span_sources
			WHERE mcp_id = $1 AND resource_hash = ANY($2) AND last_span_at >= $3`, mcpID, resources, since)
		if err == nil {
			ids, err = collectIDs(rows, len(resources))
		}
		return wrap(err)
	})
	if err != nil {
		if err != errPaused {
			s.db.log.Warn("otlp span sources: PostgreSQL unreachable, answering from this instance's memory", "mcp_id", mcpID, "error", err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range resources {
			if at, ok := s.seen[spanSourceKey{mcpID, r}]; ok && !at.Before(since) {
				out[r] = true
			}
		}
		return out, nil
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
