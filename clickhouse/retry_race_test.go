package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/wal"
)

// cutSink gives up on the flusher's first insert on the client side once
// the server has stored its raw rows, while the server still runs the
// insert's views: the flusher's retry then comes while that attempt is
// still storing rollups.
type cutSink struct {
	*clickhouse.DB
	raw     ch.Conn
	node    string
	cut     atomic.Bool
	midway  atomic.Bool // the client gave up with events stored and the insert still running
	queryID string
}

func (s *cutSink) InsertBatch(ctx context.Context, insertID string, rows []analytics.StoredRow) error {
	if s.cut.Swap(true) {
		return s.DB.InsertBatch(ctx, insertID, rows)
	}
	s.queryID = "ingest:" + s.Database() + ":" + insertID
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.DB.InsertBatch(ictx, insertID, rows) }()
	for {
		select {
		case err := <-done:
			return fmt.Errorf("the first attempt ended before it could be cut: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
		var stored, running uint64
		q := fmt.Sprintf("SELECT (SELECT count() FROM %s.events WHERE ingest_node = ?), (SELECT count() FROM system.processes WHERE query_id = ?)", s.Database())
		if err := s.raw.QueryRow(context.Background(), q, s.node, s.queryID).Scan(&stored, &running); err != nil {
			return err
		}
		if stored > 0 {
			s.midway.Store(running > 0)
			cancel() // the client's deadline: the server goes on
			err := <-done
			if err == nil {
				return fmt.Errorf("the first attempt succeeded although cut")
			}
			return err
		}
	}
}

// A retry never races the insert it retries: the flusher's first insert of
// a batch is given up on the client side after its raw rows are stored and
// while its views still run; the retry 100 ms later waits until that
// attempt has left system.processes before checking what is stored, so
// every rollup holds the batch exactly once (the same reads as the same
// items inserted whole), and the raw table too.
func TestRetryWaitsForTheInsertItRetries(t *testing.T) {
	t.Parallel()
	db := openUnprovenTestDB(t)
	ctx := context.Background()
	raw, err := ch.Open(&ch.Options{Addr: []string{testenv.ClickHouseAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := wal.Open(t.TempDir(), wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sink := &cutSink{DB: db, raw: raw, node: "node-race/" + l.ID()}
	p := ingest.New(l, sink, ingest.Options{Node: "node-race", DedupWindow: 24 * time.Hour, FlushInterval: 2 * time.Second,
		FlushMaxRows: 1 << 20, RateLimitPerMinute: 1000, Logger: quiet})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() { stop(); <-done }()

	now := time.Now().UTC().Truncate(time.Second)
	const payloads, per = 10, 4000
	var whole []analytics.StoredRow
	for n := range payloads {
		items := make([]analytics.Item, per)
		for i := range items {
			k := n*per + i
			items[i] = analytics.Item{ID: fmt.Sprint("race-", k), Timestamp: now.Add(-time.Duration(k%5000) * 20 * time.Second),
				SessionID: fmt.Sprint("s", k%97), Method: analytics.MethodToolsCall, Name: fmt.Sprint("tool-", k%13),
				DurationMs: ms(float64(k % 300)), ClientName: "cursor", ClientVersion: "1.0", UserID: fmt.Sprint("u", k%41),
				Attributes: map[string]string{"k": fmt.Sprint(k % 211)}}
			if k%9 == 0 {
				items[i].Status, items[i].ErrorType = analytics.StatusError, "Timeout"
			}
			items[i].Normalize()
			whole = append(whole, analytics.StoredRow{AccountID: acct1, MCPID: "mcp_whole", Node: "node-whole", Seq: uint64(n + 1), ReceivedAt: now, Item: items[i]})
		}
		if acc, _, err := p.Ingest(ctx, acct1, "mcp_race", items, 0); err != nil || acc != per {
			t.Fatalf("ingest: %d, %v", acc, err)
		}
	}
	if err := db.InsertRows(ctx, whole); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.WaitFlushed(wctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !sink.cut.Load() {
		t.Fatal("the flusher never inserted")
	}
	if !sink.midway.Load() {
		t.Fatal("the first attempt was not cut while it ran: the test did not reproduce the race")
	}

	var events uint64
	if err := raw.QueryRow(ctx, "SELECT count() FROM "+db.Database()+".events WHERE mcp_id = 'mcp_race'").Scan(&events); err != nil || events != payloads*per {
		t.Fatalf("events of the batch: %d, %v; want %d", events, err, payloads*per)
	}
	r := analytics.NewRange(now.Add(-48*time.Hour), now)
	read := func(mcp string) any {
		o, tl, b := rollupReads(t, db, mcp, r)
		out, _ := json.Marshal([]any{o, tl, b})
		var v any
		_ = json.Unmarshal([]byte(strings.ReplaceAll(string(out), mcp, "MCP")), &v)
		return v
	}
	for _, d := range readDiff("", read("mcp_race"), read("mcp_whole")) {
		t.Errorf("reads of the batch whose first insert was cut: %s", d)
	}
}

// readDiff lists where two decoded JSON reads differ: counts and sums
// exactly, the t-digest percentiles (p50_ms, p95_ms, p99_ms) within 1%:
// they are approximate, and depend on how the states were split into
// parts (a rollup completed by the ledger merges in another order).
func readDiff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for k := range w {
			out = append(out, readDiff(path+"."+k, g[k], w[k])...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		if len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %d entries, want %d", path, len(g), len(w))}
		}
		var out []string
		for i := range w {
			out = append(out, readDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	case float64:
		g, ok := got.(float64)
		if ok && g == w {
			return nil
		}
		if k := path[strings.LastIndexByte(path, '.')+1:]; ok && (k == "p50_ms" || k == "p95_ms" || k == "p99_ms") && math.Abs(g-w) <= 0.01*math.Abs(w) {
			return nil
		}
	default:
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
}

// The ledger's premise: an insert writes each view's rows of a day as one
// part, its marker with them. A view with many keys aggregates in two
// levels and gives one block per bucket, and a view's blocks are squashed
// only up to min_insert_block_size_rows/bytes: without both settings
// pinned, a rollup partition gets several parts from one insert (the
// control below). With them (InsertRows), exactly one.
func TestInsertWritesOnePartPerRollupPartition(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	raw, err := ch.Open(&ch.Options{Addr: []string{testenv.ClickHouseAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// Merges stopped on this database's tables only (the server is shared).
	var tables []struct {
		Name string `ch:"name"`
	}
	if err := raw.Select(ctx, &tables, "SELECT name FROM system.tables WHERE database = ? AND engine LIKE '%MergeTree'", db.Database()); err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		if err := raw.Exec(ctx, "SYSTEM STOP MERGES "+db.Database()+"."+table.Name); err != nil {
			t.Fatal(err)
		}
	}
	// parts counts the active parts of each rollup's partitions.
	parts := func() map[string]uint64 {
		rows, err := raw.Query(ctx, "SELECT table, partition, count() FROM system.parts WHERE database = ? AND active AND table NOT IN ('events', 'schema_migrations') GROUP BY table, partition", db.Database())
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]uint64{}
		for rows.Next() {
			var table, partition string
			var n uint64
			if err := rows.Scan(&table, &partition, &n); err != nil {
				t.Fatal(err)
			}
			out[table+"/"+partition] = n
		}
		return out
	}
	now := time.Now().UTC().Truncate(time.Second)
	var rows []analytics.StoredRow
	for i := range 3000 {
		s := itemSpec{account: acct1, mcp: "mcp_parts", ts: now.Add(-time.Duration(i) * 30 * time.Second), session: fmt.Sprint("s", i),
			method: analytics.MethodToolsCall, name: fmt.Sprint("tool-", i), dur: ms(float64(i)), client: fmt.Sprint("c", i), clientVer: "1", user: fmt.Sprint("u", i)}
		rows = append(rows, s.row(uint64(1+i/100)))
	}
	before := parts()
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	after := parts()
	if len(after) < 2 {
		t.Fatalf("rollup parts: %v", after)
	}
	for p, n := range after {
		if n-before[p] != 1 {
			t.Errorf("%s: %d parts from one insert, want 1", p, n-before[p])
		}
	}
	// The control: the same rows again through the views, aggregated in
	// two levels and not squashed, make more than one part in a rollup
	// partition. On a cluster the insert into the Distributed table is
	// forwarded to the shards in blocks of their own, where these
	// per-query settings do not shape the views' output: the control
	// runs on a single server only.
	if testenv.ClickHouseCluster() == "" {
		controlTwoLevel(ctx, t, raw, db.Database(), after, parts)
	}
	if clickhouse.ProveOn26(t, db) {
		for _, q := range []string{"SELECT count() FROM system.processes WHERE startsWith(query_id, 'x') OR startsWith(initial_query_id, 'x')",
			"SELECT 1 SETTINGS group_by_two_level_threshold = 0, group_by_two_level_threshold_bytes = 0"} {
			if _, err := clickhouse.QueryOn26(q); err != nil {
				t.Errorf("ClickHouse 26: %v\n%s", err, q)
			}
		}
	}
}

// controlTwoLevel inserts the MCP's rows again with two-level aggregation
// and no squashing, and fails unless some rollup partition then got more
// than one part: the settings InsertRows pins are what keep one part.
func controlTwoLevel(ctx context.Context, t *testing.T, raw ch.Conn, database string, after map[string]uint64, parts func() map[string]uint64) {
	t.Helper()
	two := ch.Context(ctx, ch.WithSettings(ch.Settings{"group_by_two_level_threshold": 1, "group_by_two_level_threshold_bytes": 1,
		"min_insert_block_size_rows": 1, "min_insert_block_size_bytes": 1}))
	if err := raw.Exec(two, fmt.Sprintf("INSERT INTO %[1]s.events SELECT * FROM %[1]s.events WHERE mcp_id = 'mcp_parts'", database)); err != nil {
		t.Fatal(err)
	}
	split := 0
	for p, n := range parts() {
		if n-after[p] > 1 {
			split++
		}
	}
	if split == 0 {
		t.Error("the control: aggregating in two levels wrote one part per partition too; the test shows nothing")
	}
}
