package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

func TestInsertedSeqsAndRecentIDs(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var rows []analytics.StoredRow
	for i, spec := range []struct {
		node     string
		seq      uint64
		id       string
		received time.Time
		ts       time.Time
	}{
		{"n1", 10, "id-1", now, now},
		{"n1", 10, "id-2", now, now},
		{"n1", 12, "", now, now}, // no id: nothing to deduplicate
		{"n1", 13, "id-old", now.Add(-48 * time.Hour), now.Add(-48 * time.Hour)},
		{"n1", 14, "id-late", now.Add(-time.Hour), now.Add(-20 * 24 * time.Hour)}, // accepted recently, 20 days old
		{"n2", 11, "id-3", now, now},
	} {
		s := itemSpec{account: acct1, mcp: fmt.Sprintf("m%d", i%2), ts: spec.ts, received: spec.received,
			session: "s", method: "ping", id: spec.id}
		r := s.row(spec.seq)
		r.Node = spec.node
		rows = append(rows, r)
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	seqs, err := db.InsertedSeqs(ctx, "n1", 10, 13, now.Add(-49*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	// By record and UTC day: what a retry leaves out.
	at := func(seq uint64, ts time.Time) analytics.RecordDay {
		return analytics.RecordDay{Seq: seq, Day: analytics.DayOf(ts)}
	}
	if len(seqs) != 3 || !seqs[at(10, now)] || !seqs[at(12, now)] || !seqs[at(13, now.Add(-48*time.Hour))] {
		t.Errorf("n1 seqs 10..13 = %v", seqs)
	}
	// The timestamps bound the check: records outside them are not seen.
	if seqs, _ := db.InsertedSeqs(ctx, "n1", 10, 13, now.Add(-49*time.Hour), now.Add(-47*time.Hour)); len(seqs) != 1 || !seqs[at(13, now.Add(-48*time.Hour))] {
		t.Errorf("n1 seqs 10..13 within two days ago = %v, want only 13", seqs)
	}
	if seqs, _ := db.InsertedSeqs(ctx, "n3", 0, 1<<63, now.Add(-30*24*time.Hour), now); len(seqs) != 0 {
		t.Errorf("unknown node: %v", seqs)
	}
	got := map[string]string{}
	if err := db.RecentIDs(ctx, now.Add(-24*time.Hour), func(mcpID, id string, at time.Time) {
		got[id] = mcpID
		if id == "id-late" && at.Unix() != now.Add(-time.Hour).Unix() {
			t.Errorf("id-late received at %v, want %v", at, now.Add(-time.Hour))
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"id-1": "m0", "id-2": "m1", "id-late": "m0", "id-3": "m1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("recent ids = %v, want %v", got, want)
	}
	stored := map[string]string{}
	ids := map[string][]string{"m0": {"id-1", "id-late", "id-old", "id-3", "nope", "it's"}, "m1": {"id-3"}}
	if err := db.StoredIDs(ctx, now.Add(-24*time.Hour), ids, func(mcpID, id string, at time.Time) {
		stored[id] = mcpID
		if id == "id-late" && at.Unix() != now.Add(-time.Hour).Unix() {
			t.Errorf("stored id-late received at %v, want %v", at, now.Add(-time.Hour))
		}
	}); err != nil {
		t.Fatal(err)
	}
	// A long list (a flush of ids of 60 characters) is split below the
	// server's max_query_size.
	long := []string{"id-1"}
	for i := 0; i < 12000; i++ {
		long = append(long, fmt.Sprintf("%060d", i))
	}
	found := 0
	if err := db.StoredIDs(ctx, now.Add(-24*time.Hour), map[string][]string{"m0": long}, func(string, string, time.Time) { found++ }); err != nil || found != 1 {
		t.Errorf("long list: %d found, %v; want id-1 only", found, err)
	}
	// id-old was received two days ago (outside the window); id-3 is m1's.
	if want := map[string]string{"id-1": "m0", "id-late": "m0", "id-3": "m1"}; fmt.Sprint(stored) != fmt.Sprint(want) {
		t.Errorf("stored ids = %v, want %v", stored, want)
	}
}

func TestOpenUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	// Open succeeds (it dials lazily, so the service can start during an
	// outage); the first statement reports the outage.
	db, err := clickhouse.Open(context.Background(), clickhouse.Config{Addr: []string{addr}, Database: "t", DialTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open while the server is down: %v", err)
	}
	defer db.Close()
	err = db.Migrate(context.Background())
	wantCode(t, err, telemetry.EUNAVAILABLE)
	var te *telemetry.Error
	if !errors.As(err, &te) || te.RetryAfter < 1 {
		t.Errorf("unavailable error %v carries no Retry-After", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []clickhouse.Config{
		{},
		{Addr: []string{"x:1"}, Database: "bad-name; DROP"},
		{Addr: []string{"x:1"}, Cluster: "c1 ON CLUSTER x"},
		{Addr: []string{"x:1"}, Cluster: "c1'"},
	} {
		if err := c.Validate(); telemetry.ErrorCode(err) != telemetry.EINVALID {
			t.Errorf("%+v: %v", c, err)
		}
	}
	c := clickhouse.Config{Addr: []string{"x:1"}, Cluster: "prod-eu.1"}
	if err := c.Validate(); err != nil || c.Database != "telemetry" || c.MaxOpenConns != 10 || c.DialTimeout != 5*time.Second {
		t.Errorf("defaults: %+v %v", c, err)
	}
}

// BenchmarkInsertRows measures InsertRows with 10,000-row batches (the
// flusher's size), through every rollup view.
func BenchmarkInsertRows(b *testing.B) {
	db := openTestDB(b)
	ctx := context.Background()
	const batch = 10_000
	now := time.Now().UTC()
	rows := make([]analytics.StoredRow, batch)
	for i := range rows {
		rows[i] = itemSpec{account: acct1, mcp: fmt.Sprintf("mcp-%d", i%20), ts: now.Add(-time.Duration(i) * time.Second),
			session: fmt.Sprintf("s-%d", i/10), method: analytics.MethodToolsCall, name: fmt.Sprintf("tool-%d", i%15),
			dur: ms(float64(i % 500)), client: "claude-desktop", clientVer: "0.9.1", user: fmt.Sprintf("u-%d", i%300),
			id: fmt.Sprintf("id-%d", i)}.row(uint64(i))
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if err := db.InsertRows(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}

// An insert goes over an idle connection of an earlier one; one the server
// dropped meanwhile is replaced before the block is sent, so the insert
// is stored once. A cancelled insert answers the context's error.
func TestInsertAfterTheIdleConnectionDropped(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC()
	batch := func(from int) []analytics.StoredRow {
		var rows []analytics.StoredRow
		for i := from; i < from+5; i++ {
			rows = append(rows, itemSpec{account: acct1, mcp: "m-idle", ts: now, session: "s", method: "ping",
				id: fmt.Sprint("idle-", i)}.row(uint64(i+1)))
		}
		return rows
	}
	if err := db.InsertRows(ctx, batch(0)); err != nil {
		t.Fatal(err)
	}
	if n := db.BreakIdleInserts(); n != 1 {
		t.Fatalf("%d idle insert connections after an insert, want 1", n)
	}
	if err := db.InsertBatch(ctx, "n/idle-1", batch(5)); err != nil {
		t.Fatalf("insert over a dropped connection: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.InsertRows(cancelled, batch(10)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled insert: %v", err)
	}
	got := map[string]int{}
	if err := db.RecentIDs(ctx, now.Add(-time.Hour), func(mcpID, id string, _ time.Time) { got[id]++ }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Errorf("%d ids stored, want idle-0..idle-9: %v", len(got), got)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
}
