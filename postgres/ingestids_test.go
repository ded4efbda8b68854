package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// claimNow claims with the payload already durable.
func claimNow(r *IngestIDs, node, mcpID string, ids []string, at time.Time) ([]string, error) {
	durable := make(chan error, 1)
	durable <- nil
	return r.Claim(context.Background(), node, mcpID, ids, at, durable)
}

// A claim owns the ids no record accepted in the window before; claims
// are per MCP, idempotent for their record (node and receipt), and ids
// older than the window are new again, before and after Expire.
func TestIngestIDsClaimExpire(t *testing.T) {
	// Not parallel: Expire moves the table's one sweep position
	// (ingest_claims_sweep), which the other of these two tests reads.
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour)
	now := time.Now()
	mcp := fmt.Sprintf("mcp-%d", now.UnixNano())

	own, err := claimNow(r, "a", mcp, []string{"a", "b", "it's"}, now)
	if err != nil || len(own) != 3 {
		t.Fatalf("first claim: %v, %v", own, err)
	}
	if own, err := claimNow(r, "a", mcp, []string{"a", "b", "it's"}, now); err != nil || len(own) != 3 {
		t.Fatalf("the same record's claim again = %v, %v; want all its own (idempotent)", own, err)
	}
	if own, err := claimNow(r, "b", mcp, []string{"a", "c"}, now.Add(time.Second)); err != nil || !slices.Equal(own, []string{"c"}) {
		t.Fatalf("another node's claim = %v, %v; want only c (a is accepted)", own, err)
	}
	if own, err := claimNow(r, "a", mcp, []string{"b"}, now.Add(time.Nanosecond)); err != nil || len(own) != 0 {
		t.Fatalf("another record of the same node = %v, %v; want nothing", own, err)
	}
	if own, _ := claimNow(r, "a", "other-"+mcp, []string{"a"}, now); len(own) != 1 {
		t.Fatalf("ids are per MCP: %v", own)
	}
	// A day later the ids are new again, before and after Expire.
	later := now.Add(24*time.Hour + 3*time.Second)
	if own, _ := claimNow(r, "b", mcp, []string{"a"}, later); len(own) != 1 {
		t.Fatalf("a day later: %v", own)
	}
	n, err := r.Expire(ctx, later, 1000)
	if err != nil || n < 3 {
		t.Fatalf("Expire = %d, %v; want b, it's and c gone at least", n, err)
	}
	if own, _ := claimNow(r, "b", mcp, []string{"a", "b"}, later.Add(time.Nanosecond)); !slices.Equal(own, []string{"b"}) {
		t.Fatalf("after expiry: %v, want b only (a was claimed a day later)", own)
	}
}

// A claim commits only once its payload is durable: until then another
// claim of the same ids waits; when the log refuses the payload, the
// claim is rolled back and the other one gets the ids.
func TestIngestIDsClaimWaitsForTheLog(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour)
	now := time.Now()
	mcp := fmt.Sprintf("mcp-durable-%d", now.UnixNano())
	refused := errors.New("log full")
	for _, tc := range []struct {
		durable error
		want    []string // the second claim's
	}{{refused, []string{"x", "y"}}, {nil, []string{"y"}}} {
		first := make(chan error, 1)
		firstDone := make(chan error, 1)
		go func() {
			_, err := r.Claim(ctx, "a", mcp, []string{"x"}, now, first)
			firstDone <- err
		}()
		time.Sleep(100 * time.Millisecond) // the first claim's insert is in
		secondDone := make(chan []string, 1)
		go func() {
			own, err := claimNow(r, "b", mcp, []string{"x", "y"}, now.Add(time.Second))
			if err != nil {
				t.Error(err)
			}
			secondDone <- own
		}()
		select {
		case own := <-secondDone:
			t.Fatalf("second claim answered %v while the first was not committed", own)
		case <-time.After(200 * time.Millisecond):
		}
		first <- tc.durable
		if err := <-firstDone; !errors.Is(err, tc.durable) {
			t.Fatalf("first claim: %v, want %v", err, tc.durable)
		}
		if own := <-secondDone; !slices.Equal(own, tc.want) {
			t.Fatalf("log answered %v: second claim got %v, want %v", tc.durable, own, tc.want)
		}
		if _, err := db.Pool.Exec(ctx, `DELETE FROM ingest_claims WHERE node IN ($1, $2)`, nodeHash("a"), nodeHash("b")); err != nil {
			t.Fatal(err)
		}
	}
}

// Settle claims the ids of many records at once: a record keeps what it
// claimed before, loses what another record owns, and an id repeated
// across records goes to the first that owns it.
func TestIngestIDsSettle(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour)
	now := time.Now()
	mcp := fmt.Sprintf("mcp-settle-%d", now.UnixNano())

	// Record 2 of node a claimed x before its instance died; node b
	// accepted y (a retry of record 1, whose claim never committed).
	if own, err := claimNow(r, "a", mcp, []string{"x"}, now); err != nil || len(own) != 1 {
		t.Fatal(own, err)
	}
	if own, err := claimNow(r, "b", mcp, []string{"y"}, now); err != nil || len(own) != 1 {
		t.Fatal(own, err)
	}
	lost, err := r.Settle(ctx, "a", []analytics.IDClaim{
		{Seq: 1, MCPID: mcp, IDs: []string{"x", "y", "z"}, At: now.Add(-time.Second)},
		{Seq: 2, MCPID: mcp, IDs: []string{"x"}, At: now},
		{Seq: 3, MCPID: mcp, IDs: []string{"z", "w"}, At: now.Add(time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// x: record 2's (claimed before). y: node b's. z: record 1 owns it
	// (first), record 3's copy is a repeat. w: record 3's.
	want := [][]string{{"x", "y"}, nil, {"z"}}
	for i := range want {
		slices.Sort(lost[i])
		if !slices.Equal(lost[i], want[i]) {
			t.Errorf("record %d lost %v, want %v", i+1, lost[i], want[i])
		}
	}
	// Settling again gives the same answer (a replay after a crash).
	again, err := r.Settle(ctx, "a", []analytics.IDClaim{{Seq: 3, MCPID: mcp, IDs: []string{"z", "w"}, At: now.Add(time.Second)}})
	if err != nil || !slices.Equal(again[0], []string{"z"}) {
		t.Fatalf("settle again = %v, %v; want z lost, w kept", again, err)
	}
}

// The ids confirmed under the previous protocol carry over (node 0): the
// hash is the same in Go and in SQL, and a replayed record of the same
// receipt owns them, while any other claim finds them accepted.
func TestIngestIDsCarriedOver(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour)
	now := time.Now().Truncate(time.Microsecond) // as the previous protocol stored it
	mcp := fmt.Sprintf("mcp-ü-%d", now.UnixNano())
	var h [16]byte
	if err := db.Pool.QueryRow(ctx, `SELECT md5(octet_length($1::text)::text || ':' || $1 || $2)::uuid`, mcp, "ïd").Scan(&h); err != nil {
		t.Fatal(err)
	}
	if h != idHash(mcp, "ïd") {
		t.Fatalf("the migration's hash %x differs from idHash's %x", h, idHash(mcp, "ïd"))
	}
	for _, id := range []string{"ïd", "other"} {
		// As migration 013 carries a confirmed row over.
		if _, err := db.Pool.Exec(ctx, `INSERT INTO ingest_claims (h, node, at)
			VALUES (md5(octet_length($1::text)::text || ':' || $1 || $2)::uuid, 0,
				(extract(epoch FROM $3::timestamptz) * 1000000)::bigint * 1000)`, mcp, id, now); err != nil {
			t.Fatal(err)
		}
	}
	if own, err := claimNow(r, "b", mcp, []string{"ïd"}, now.Add(time.Second)); err != nil || len(own) != 0 {
		t.Fatalf("claim of a carried-over id = %v, %v; want none", own, err)
	}
	// The replayed record's receipt in nanoseconds; the old rows kept
	// microseconds.
	lost, err := r.Settle(ctx, "a", []analytics.IDClaim{{Seq: 7, MCPID: mcp, IDs: []string{"ïd", "other"}, At: now.Add(789 * time.Nanosecond)}})
	if err != nil || len(lost[0]) != 0 {
		t.Fatalf("replay of the record that confirmed them lost %v (%v), want none", lost, err)
	}
}

// Concurrent claims of the same ids: each id goes to exactly one record.
func TestIngestIDsConcurrent(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	r := NewIngestIDs(db, 24*time.Hour)
	mcp := fmt.Sprintf("mcp-race-%d", time.Now().UnixNano())
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = fmt.Sprint("id", i)
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			own, err := claimNow(r, fmt.Sprint("node", i), mcp, ids, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, id := range own {
				got[id]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("%s claimed %d times", id, got[id])
		}
	}
}

// The claims of payloads that arrive while a group is in flight form one
// group; when the log refuses one of them, the others keep their claims
// (an id two of them carry goes to the first) and the refused one holds
// none.
func TestIngestIDsClaimGroupOneRefused(t *testing.T) {
	t.Parallel()
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour)
	r.maxGroups = 1
	now := time.Now()
	mcp := fmt.Sprintf("mcp-group-%d", now.UnixNano())

	// A first claim holds the only group until its log answers.
	held := make(chan error, 1)
	first := make(chan error, 1)
	go func() {
		_, err := r.Claim(ctx, "a", mcp, []string{"h"}, now, held)
		first <- err
	}()
	waitFor(t, "the first group", 5*time.Second, func() bool { return r.groups.Load() == 1 })

	type payload struct {
		ids     []string
		durable error
		own     []string
		err     error
	}
	refused := errors.New("log full")
	ps := []*payload{
		{ids: []string{"b1", "b2", "dup"}},
		{ids: []string{"c1", "c2"}, durable: refused},
		{ids: []string{"d1", "dup"}},
	}
	var wg sync.WaitGroup
	for i, p := range ps {
		durable := make(chan error, 1)
		durable <- p.durable
		wg.Go(func() { p.own, p.err = r.Claim(ctx, "a", mcp, p.ids, now.Add(time.Duration(i+1)), durable) })
		// In this order in the queue, so that b is the first with dup.
		waitFor(t, "the claim queued", 5*time.Second, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.queue) == i+1 })
	}
	held <- nil
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if g := r.groups.Load(); g != 2 {
		t.Fatalf("%d groups, want 2 (the three payloads in one)", g)
	}
	if !slices.Equal(ps[0].own, ps[0].ids) || ps[0].err != nil {
		t.Errorf("b owns %v (%v), want all its ids", ps[0].own, ps[0].err)
	}
	if !errors.Is(ps[1].err, refused) || ps[1].own != nil {
		t.Errorf("c (refused by the log) = %v, %v; want the log's error", ps[1].own, ps[1].err)
	}
	if !slices.Equal(ps[2].own, []string{"d1"}) || ps[2].err != nil {
		t.Errorf("d owns %v (%v), want d1 (dup is b's)", ps[2].own, ps[2].err)
	}
	// In PostgreSQL: each id of b and d owned by its record, none of c's.
	want := map[string]int64{"h": now.UnixNano(), "b1": now.UnixNano() + 1, "b2": now.UnixNano() + 1, "dup": now.UnixNano() + 1, "d1": now.UnixNano() + 3}
	for _, id := range []string{"h", "b1", "b2", "dup", "d1", "c1", "c2"} {
		var node, at int64
		err := db.Pool.QueryRow(ctx, `SELECT node, at FROM ingest_claims WHERE h = $1`, idHash(mcp, id)).Scan(&node, &at)
		w, claimed := want[id]
		switch {
		case !claimed && err == nil:
			t.Errorf("%s (of the refused payload) is claimed by %d at %d", id, node, at)
		case claimed && (err != nil || node != nodeHash("a") || at != w):
			t.Errorf("%s: owner %d at %d (%v), want %d at %d", id, node, at, err, nodeHash("a"), w)
		}
	}
}

// Expire sweeps the table a chunk of pages at a time (a TID range scan,
// at most limit rows a call) and deletes exactly the rows past the
// window; the next sweep begins an eighth of the window after the last
// one began.
func TestIngestIDsExpireSweep(t *testing.T) {
	// Not parallel: Expire moves the table's one sweep position
	// (ingest_claims_sweep), which the other of these two tests reads.
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, time.Hour)
	if _, err := db.Pool.Exec(ctx, `UPDATE ingest_claims_sweep SET next_block = 1e15, started_at = 0` /* no sweep under way */); err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	node := nodeHash(fmt.Sprint("sweep-", base.UnixNano()))
	// 3,000 rows received over the last two hours, then 3,000 more
	// within the last minute in a random key order: about 45 pages.
	fills := 0
	fill := func(n int, span time.Duration, end time.Time) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `INSERT INTO ingest_claims (h, node, at)
			SELECT md5($1::text || i)::uuid, $2, $3::bigint - $4::bigint / $5 * i FROM generate_series(0, $5 - 1) AS i`,
			fmt.Sprint(base.UnixNano(), "-", fills, "-"), node, end.UnixNano(), span.Nanoseconds(), n); err != nil {
			t.Fatal(err)
		}
		fills++
	}
	fill(3000, 2*time.Hour, base)
	fill(3000, time.Minute, base)
	counts := func(cutoff time.Time) (past, within int) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE at <= $2), count(*) FILTER (WHERE at > $2)
			FROM ingest_claims WHERE node = $1`, node, cutoff.UnixNano()).Scan(&past, &within); err != nil {
			t.Fatal(err)
		}
		return past, within
	}
	sweep := func(now time.Time, limit int) (calls int) {
		t.Helper()
		for {
			calls++
			n, err := r.Expire(ctx, now, limit)
			if err != nil || n > limit {
				t.Fatalf("Expire = %d, %v; limit %d", n, err, limit)
			}
			if n < limit {
				return calls
			}
		}
	}
	_, within := counts(base.Add(-time.Hour))
	if calls := sweep(base, claimRowsPerPage); calls < 40 {
		t.Fatalf("a sweep of a page a call took %d calls; want one a page", calls)
	}
	if past, left := counts(base.Add(-time.Hour)); past != 0 || left != within || within < 4400 {
		t.Fatalf("after the sweep %d rows past the window, %d within (want 0, %d)", past, left, within)
	}
	// Rows past the window in pages swept already wait for the next
	// sweep, due an eighth of the window after this one began.
	if _, err := db.Pool.Exec(ctx, `VACUUM ingest_claims`); err != nil {
		t.Fatal(err)
	}
	fill(100, time.Minute, base.Add(-2*time.Hour))
	began := func() (at int64) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT started_at FROM ingest_claims_sweep`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	sweep(base.Add(7*time.Minute), 10000)
	if at := began(); at != base.UnixNano() {
		t.Fatalf("a sweep began at %d before it was due (the last began at %d)", at, base.UnixNano())
	}
	// The next sweep begins when due even if the table grew since the
	// last one read its end (as if by a page here).
	if _, err := db.Pool.Exec(ctx, `UPDATE ingest_claims_sweep SET next_block = next_block - 1`); err != nil {
		t.Fatal(err)
	}
	later := base.Add(8 * time.Minute)
	_, within = counts(later.Add(-time.Hour))
	sweep(later, 10000)
	if past, left := counts(later.Add(-time.Hour)); past != 0 || left != within || began() != later.UnixNano() {
		t.Fatalf("after the next sweep %d rows past the window, %d within (want 0, %d)", past, left, within)
	}
	// Each call reads its pages only.
	rows, err := db.Pool.Query(ctx, "EXPLAIN "+expireSQL, pageTID(0), pageTID(73), int64(0))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := collectIDs(rows, 4)
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "Tid Range Scan") {
		t.Fatalf("expiry's plan %q; want a TID range scan", plan)
	}
}

// A group's rows are its keys once each, in PostgreSQL's uuid order (the
// lock order of every group), and a key in several payloads of the
// group goes to the first of them.
func TestIngestIDsGroupRows(t *testing.T) {
	t.Parallel()
	ids := [][]string{{"a", "b", "c"}, {"c", "d", "a"}, {"e", "c"}}
	var group []*claimReq
	for i, p := range ids {
		q := &claimReq{ids: p, node: int64(i + 1), at: int64(100 + i), done: make(chan claimResult, 1)}
		for _, id := range p {
			q.keys = append(q.keys, idHash("mcp", id))
		}
		group = append(group, q)
	}
	g := newClaimRows(group)
	if len(g.keys) != 5 || !g.repeated {
		t.Fatalf("%d keys (repeated %v); want a to e once each", len(g.keys), g.repeated)
	}
	for i := 1; i < len(g.keys); i++ {
		if bytes.Compare(g.keys[i-1][:], g.keys[i][:]) >= 0 {
			t.Fatalf("keys out of order at %d: %x, %x", i, g.keys[i-1], g.keys[i])
		}
	}
	owner := map[[16]byte]int64{idHash("mcp", "a"): 1, idHash("mcp", "b"): 1, idHash("mcp", "c"): 1, idHash("mcp", "d"): 2, idHash("mcp", "e"): 3}
	for i, k := range g.keys {
		if g.nodes[i] != owner[k] || g.ats[i] != 99+owner[k] {
			t.Fatalf("key %x claimed for node %d at %d; want its first payload's (%d)", k, g.nodes[i], g.ats[i], owner[k])
		}
	}
	g.answer(group, nil, nil)
	for i, want := range [][]string{{"a", "b", "c"}, {"d"}, {"e"}} {
		if res := <-group[i].done; res.err != nil || !slices.Equal(res.own, want) {
			t.Fatalf("payload %d owns %v (%v); want %v", i, res.own, res.err, want)
		}
	}
}
