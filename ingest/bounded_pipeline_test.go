package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// bounded gives the pipeline a bounded duplicate filter of about 1024 exact
// ids (docs/exactly-once.md, "Bounded memory").
func bounded(o *ingest.Options) { o.DedupExactIDs, o.DedupFilterBytes = 1024, 1<<20 }

// ingestAll ingests n fresh ids prefix-0.. in payloads of 500, each
// accepted whole.
func ingestAll(t *testing.T, h *harness, mcp, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i += 500 {
		its := items(prefix, n)[i:min(n, i+500)]
		if acc, drop, err := h.p.Ingest(context.Background(), "acc", mcp, its, 0); err != nil || acc != len(its) || drop != 0 {
			t.Fatalf("%s: accepted %d dropped %d %v; want all %d accepted", prefix, acc, drop, err, len(its))
		}
	}
}

// With a filter that answers "maybe" for every id outside the exact table,
// no id that is not a duplicate is dropped (the flusher's check in
// ClickHouse clears it), duplicates of ids that left the exact table for
// the filter are stored once, and so after a restart, when the filter is
// rebuilt from ClickHouse.
func TestBoundedFilterNoFalseDropsNoDoubles(t *testing.T) {
	addr := testenv.ClickHouseAddr(t)
	db := chDB(t, addr)
	dir := t.TempDir()
	ctx := context.Background()

	h := start(t, dir, db, bounded)
	ingest.SaturateDedupFilter(h.p)
	// Fresh ids, every one unverified: all stored.
	ingestAll(t, h, "m", "a", 1500)
	waitRows(t, addr, db.Database(), "m", 1500)
	// Enough others, stored in turn, that a-* leave the exact table.
	total := 1500
	for round := 0; h.p.DedupStats().FilterIDs < 3000; round++ {
		if round == 20 {
			t.Fatalf("%+v: the exact table does not hand the stored ids to the filter", h.p.DedupStats())
		}
		ingestAll(t, h, "m", fmt.Sprintf("b%d", round), 1000)
		total += 1000
		waitRows(t, addr, db.Database(), "m", total)
	}
	// a-0..299 again (now only in the filter) beside 300 new ids: the
	// payload is accepted whole (the filter cannot tell), the repeats are
	// left out at flush, the new ones stored.
	its := append(items("a", 300), items("n", 300)...)
	if acc, drop, err := h.p.Ingest(ctx, "acc", "m", its, 0); err != nil || acc+drop != 600 {
		t.Fatalf("mixed payload: accepted %d dropped %d %v", acc, drop, err)
	}
	total += 300
	waitRows(t, addr, db.Database(), "m", total)
	if st := h.p.DedupStats(); st.Unverified < 1500+300 {
		t.Fatalf("%+v: fewer unverified acceptances than ids outside the exact table", st)
	}
	h.stop()

	// After a restart the filter is rebuilt from ClickHouse (not saturated
	// now): the rest of a-* and b-* are still duplicates, new ids are not.
	h = start(t, dir, db, bounded)
	defer h.stop()
	its = append(items("a", 1500)[300:], items("b0", 1000)...)
	its = append(its, items("r", 400)...)
	for i := 0; i < len(its); i += 500 {
		if _, _, err := h.p.Ingest(ctx, "acc", "m", its[i:min(len(its), i+500)], 0); err != nil {
			t.Fatal(err)
		}
	}
	waitRows(t, addr, db.Database(), "m", total+400)
	time.Sleep(500 * time.Millisecond) // a late double would show now
	waitRows(t, addr, db.Database(), "m", total+400)
}

// Ids leave the exact table before ClickHouse stores them: a repeat that
// lands in the same flush batch as its first copy (the filter says
// "maybe") is left out by the batch's own check, so every id is stored
// once, and a repeat in a later batch is left out by ClickHouse's.
func TestBoundedFilterUnstoredRepeatInOneBatch(t *testing.T) {
	addr := testenv.ClickHouseAddr(t)
	db := chDB(t, addr)
	h := start(t, t.TempDir(), db, bounded, func(o *ingest.Options) {
		o.FlushInterval, o.FlushMaxRows = 3*time.Second, 100_000 // one batch
	})
	defer h.stop()
	ingestAll(t, h, "m", "a", 1000)
	ingestAll(t, h, "m", "b", 4000) // a-* leave the exact table, unstored
	if st := h.p.DedupStats(); st.FilterIDs < 1000 {
		t.Fatalf("%+v: the ids not stored yet stayed in the exact table", st)
	}
	repeat := func() {
		acc := 0
		for i := 0; i < 1000; i += 500 {
			a, d, err := h.p.Ingest(context.Background(), "acc", "m", items("a", 1000)[i:i+500], 0)
			if err != nil || a+d != 500 {
				t.Fatalf("repeat: accepted %d dropped %d %v", a, d, err)
			}
			acc += a
		}
		if acc == 0 {
			t.Fatal("no repeat was accepted as unverified: the test checks nothing")
		}
	}
	repeat()
	waitRows(t, addr, db.Database(), "m", 5000)
	ingestAll(t, h, "m", "c", 4000)
	repeat() // now their first copies are in ClickHouse
	waitRows(t, addr, db.Database(), "m", 9000)
	time.Sleep(500 * time.Millisecond) // a late double would show now
	waitRows(t, addr, db.Database(), "m", 9000)
}
