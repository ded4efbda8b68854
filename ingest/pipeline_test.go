package ingest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/wal"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// chDB opens a fresh migrated ClickHouse database at addr, dropped at the end.
func chDB(t *testing.T, addr string) *clickhouse.DB {
	t.Helper()
	ctx := context.Background()
	name := testenv.Name("ingest")
	db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{addr}, Database: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if conn, err := ch.Open(&ch.Options{Addr: []string{addr}}); err == nil {
			_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name)
			conn.Close()
		}
	})
	return db
}

// countIDs returns how many rows each item id has in events.
func countIDs(t *testing.T, addr, database, mcp string) map[string]int {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(context.Background(), fmt.Sprintf("SELECT %s AS item_id, count() FROM %s.events WHERE mcp_id = ? GROUP BY item_id", clickhouse.EventID, database), mcp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n uint64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = int(n)
	}
	return out
}

type harness struct {
	t      *testing.T
	dir    string
	log    *wal.Log
	p      *ingest.Pipeline
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, dir string, db analytics.Sink, with ...func(*ingest.Options)) *harness {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{SegmentBytes: 1 << 20, MaxBytes: 64 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	opts := ingest.Options{Node: "node-a", RateLimitPerMinute: 600, DedupWindow: 24 * time.Hour,
		FlushInterval: 200 * time.Millisecond, FlushMaxRows: 5000, Logger: quiet}
	for _, f := range with {
		f(&opts)
	}
	p := ingest.New(l, db, opts)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, dir: dir, log: l, p: p, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- p.Run(ctx) }()
	return h
}

func (h *harness) stop() {
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("run: %v", err)
	}
	_ = h.log.Close()
}

func items(prefix string, n int) []analytics.Item {
	now := time.Now().UTC()
	out := make([]analytics.Item, n)
	for i := range out {
		d := float64(i)
		out[i] = analytics.Item{ID: fmt.Sprintf("%s-%d", prefix, i), Timestamp: now, SessionID: "s", Method: "tools/call",
			Name: "search", DurationMs: &d, Status: "ok"}
	}
	return out
}

// waitRows waits until the MCP has want distinct ids stored, then checks
// each is stored exactly once.
func waitRows(t *testing.T, addr, database, mcp string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got map[string]int
	for time.Now().Before(deadline) {
		got = countIDs(t, addr, database, mcp)
		if len(got) >= want {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(got) != want {
		t.Fatalf("stored %d distinct ids, want %d", len(got), want)
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("id %s stored %d times", id, n)
		}
	}
}

func TestPipelineConcurrentAndDuplicates(t *testing.T) {
	addr := testenv.ClickHouseAddr(t)
	db := chDB(t, addr)
	h := start(t, t.TempDir(), db)
	defer h.stop()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			its := items(fmt.Sprintf("g%d", g), 100)
			acc, drop, err := h.p.Ingest(ctx, "acc", "mcp-1", its, 0)
			if err != nil || acc != 100 || drop != 0 {
				t.Errorf("ingest: %d %d %v", acc, drop, err)
			}
		}(g)
	}
	wg.Wait()
	// The same ids again, and a batch repeating an id inside itself.
	acc, drop, err := h.p.Ingest(ctx, "acc", "mcp-1", items("g3", 100), 2)
	if err != nil || acc != 0 || drop != 102 {
		t.Fatalf("retry: accepted %d dropped %d %v; want 0, 102", acc, drop, err)
	}
	twice := append(items("x", 1), items("x", 1)...)
	twice = append(twice, analytics.Item{Timestamp: time.Now().UTC(), SessionID: "s", Method: "ping", Status: "ok"})
	if acc, drop, _ := h.p.Ingest(ctx, "acc", "mcp-1", twice, 0); acc != 2 || drop != 1 {
		t.Fatalf("in-batch duplicate: accepted %d dropped %d, want 2 and 1 (items without id are never duplicates)", acc, drop)
	}
	// Another MCP may use the same ids.
	if acc, _, _ := h.p.Ingest(ctx, "acc", "mcp-2", items("g3", 10), 0); acc != 10 {
		t.Fatalf("other MCP: accepted %d", acc)
	}
	waitRows(t, addr, db.Database(), "mcp-1", 1602) // 1600 + "x-0" + the id-less ping ("")
	waitRows(t, addr, db.Database(), "mcp-2", 10)
}

func TestRestartKeepsDuplicateFilterAndReplaysOnce(t *testing.T) {
	addr := testenv.ClickHouseAddr(t)
	db := chDB(t, addr)
	dir := t.TempDir()
	ctx := context.Background()

	// First life: accept and flush.
	h := start(t, dir, db)
	if acc, _, err := h.p.Ingest(ctx, "acc", "m", items("a", 50), 0); err != nil || acc != 50 {
		t.Fatalf("ingest: %d %v", acc, err)
	}
	waitRows(t, addr, db.Database(), "m", 50)
	h.stop()

	// Simulate a crash between the ClickHouse insert and the log ack: append
	// a record to the log, insert its rows by hand as the flusher would, and
	// do not ack it.
	l, err := wal.Open(dir, wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rec := ingest.Record{AccountID: "acc", MCPID: "m", ReceivedAt: time.Now().UTC(), Items: items("b", 30)}
	_, seq, err := l.Append(ctx, rec.Encode(nil))
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]analytics.StoredRow, 0, 30)
	for _, it := range rec.Items {
		rows = append(rows, analytics.StoredRow{AccountID: "acc", MCPID: "m", Node: "node-a", Seq: seq, ReceivedAt: rec.ReceivedAt, Item: it})
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// And one record that never reached ClickHouse.
	rec2 := ingest.Record{AccountID: "acc", MCPID: "m", ReceivedAt: time.Now().UTC(), Items: items("c", 20)}
	if _, _, err := l.Append(ctx, rec2.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	// Second life: replay must insert c-* once and not b-* again; ids of
	// the first life, of the replayed log and of the crash are all known.
	h = start(t, dir, db)
	defer h.stop()
	waitRows(t, addr, db.Database(), "m", 100)
	for _, prefix := range []string{"a", "b", "c"} {
		acc, drop, err := h.p.Ingest(ctx, "acc", "m", items(prefix, 20), 0)
		if err != nil || acc != 0 || drop != 20 {
			t.Fatalf("%s after restart: accepted %d dropped %d %v; want all dropped", prefix, acc, drop, err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	waitRows(t, addr, db.Database(), "m", 100)
}

func TestOutageKeepsAcceptingAndDeliversOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own ClickHouse")
	}
	own := testenv.OwnClickHouse(t)
	db := chDB(t, own.Addr)
	h := start(t, t.TempDir(), db)
	defer h.stop()
	ctx := context.Background()
	if acc, _, _ := h.p.Ingest(ctx, "acc", "m", items("before", 10), 0); acc != 10 {
		t.Fatal("ingest before outage")
	}
	waitRows(t, own.Addr, db.Database(), "m", 10)

	own.Stop(t)
	for i := 0; i < 5; i++ {
		acc, _, err := h.p.Ingest(ctx, "acc", "m", items(fmt.Sprintf("during%d", i), 10), 0)
		if err != nil || acc != 10 {
			t.Fatalf("during outage: %d %v", acc, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if h.p.Stats().UnackedRecords == 0 {
		t.Fatal("the log should hold the batches accepted during the outage")
	}
	own.Start(t)
	waitRows(t, own.Addr, db.Database(), "m", 60)
}

// partialSink makes the first insert fail after storing only the rows of
// its first record, as a Distributed insert does when one shard took its
// rows and another was down.
type partialSink struct {
	*clickhouse.DB
	mu     sync.Mutex
	failed bool
}

func (s *partialSink) InsertBatch(ctx context.Context, insertID string, rows []analytics.StoredRow) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed || len(rows) == 0 {
		return s.DB.InsertBatch(ctx, insertID, rows)
	}
	s.failed = true
	n := 0
	for n < len(rows) && rows[n].Seq == rows[0].Seq {
		n++
	}
	if err := s.DB.InsertBatch(ctx, insertID, rows[:n]); err != nil {
		return err
	}
	return fmt.Errorf("connection refused by the other shard (%d of %d rows stored)", n, len(rows))
}

// A failed insert that stored some records is retried without them: every
// item is stored exactly once.
func TestPartlyFailedInsertRetriedOnce(t *testing.T) {
	addr := testenv.ClickHouseAddr(t)
	db := chDB(t, addr)
	sink := &partialSink{DB: db}
	dir := t.TempDir()
	ctx := context.Background()
	// Two records in the log before the flusher starts, so that they go
	// in one insert.
	l, err := wal.Open(dir, wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"first", "second"} {
		rec := ingest.Record{AccountID: "acc", MCPID: "m", ReceivedAt: time.Now().UTC(), Items: items(prefix, 25)}
		if _, _, err := l.Append(ctx, rec.Encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	h := start(t, dir, sink)
	defer h.stop()
	waitRows(t, addr, db.Database(), "m", 50)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !sink.failed {
		t.Fatal("the insert never failed: the test tested nothing")
	}
}
