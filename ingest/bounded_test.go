package ingest

import (
	"strconv"
	"testing"
	"time"
)

// The bounded filter's memory does not grow with the ids; what it let go
// of it still answers "maybe" for within the window (never "new", which
// would let a duplicate through), and "new" once past it; a fresh id it
// was never given is mostly answered "new" (false "maybe" only at the
// filter's rate).
func TestBoundedDedupMemoryAndWindow(t *testing.T) {
	d := NewDedup(24 * time.Hour)
	d.Limit(64<<10, 8<<20)
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	const n = 2_000_000
	var peak int
	for i := 0; i < n; i += 1000 {
		at := t0.Add(time.Duration(i/1000) * time.Second)
		for j := i; j < i+1000; j++ {
			if !d.Reserve("m", strconv.Itoa(j), at) {
				t.Fatalf("fresh id %d refused", j)
			}
		}
		peak = max(peak, d.Stats().ExactBytes)
		if st := d.Stats(); st.ExactIDs > 64<<10+2000 {
			t.Fatalf("after %d ids: %d kept exactly, want at most about %d", i+1000, st.ExactIDs, 64<<10)
		}
	}
	st := d.Stats()
	t.Logf("after %d ids: %+v, peak exact bytes %d", n, st, peak)
	if peak > 2<<20 || st.FilterBytes > 8<<20 {
		t.Fatalf("memory grew with the ids: peak exact %d B, filter %d B", peak, st.FilterBytes)
	}
	if st.Unverified > n/50 {
		t.Fatalf("%d of %d fresh ids were maybes: the filter's false-positive rate is off", st.Unverified, n)
	}
	later := t0.Add(time.Hour)
	// The latest ids are still exact: plain duplicates.
	if d.Reserve("m", strconv.Itoa(n-1), later) {
		t.Fatal("a recent id was accepted again")
	}
	// The first ids were handed to the filter: accepted only as unverified
	// (the flusher asks ClickHouse), never as certainly new.
	for i := 0; i < 1000; i++ {
		id := strconv.Itoa(i)
		if ok, maybe := d.Admit("m", id, later); !ok || !maybe {
			t.Fatalf("evicted id %d: not an unverified acceptance", i)
		}
	}
	// Past the window they are new for good.
	past := t0.Add(24*time.Hour + 2*time.Hour)
	d.Sweep(past)
	fresh := 0
	for i := 1000; i < 2000; i++ {
		id := strconv.Itoa(i)
		ok, maybe := d.Admit("m", id, past)
		if !ok {
			t.Fatalf("id %d refused a day later", i)
		}
		if !maybe {
			fresh++
		}
	}
	if fresh < 990 {
		t.Fatalf("a day later only %d of 1000 ids are certainly new", fresh)
	}
}

// An id accepted near the window's end: a duplicate just before it
// (exact or through the filter), new just after.
func TestBoundedDedupWindowBoundary(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, evicted := range []bool{false, true} {
		d := NewDedup(24 * time.Hour)
		d.Limit(1024, 1<<20)
		d.Reserve("m", "x", t0)
		if evicted {
			for i := 0; i < 10_000; i++ {
				d.Reserve("m", strconv.Itoa(i), t0.Add(time.Minute))
			}
			for i := 10_000; i < 20_000; i++ {
				d.Reserve("m", strconv.Itoa(i), t0.Add(2*time.Minute))
			}
		}
		before := t0.Add(24*time.Hour - time.Second)
		got, maybe := d.Admit("m", "x", before)
		if !evicted && got {
			t.Fatal("exact: accepted a second before the window's end")
		}
		if evicted && (!got || !maybe) {
			t.Fatal("filter: not unverified a second before the window's end")
		}
		if evicted {
			d.Duplicate(d.Key("m", "x")) // what the flusher does when ClickHouse holds it
		}
		after := t0.Add(24*time.Hour + 2*time.Minute + time.Second)
		d.Sweep(after)
		if ok, maybe := d.Admit("m", "x", after); !ok || maybe {
			t.Fatalf("evicted=%v: not certainly new after the window", evicted)
		}
	}
}

// Ids not stored yet leave the exact table too (ClickHouse behind or
// down): the table does not grow with the backlog, and each of them is
// still refused or accepted only as unverified, never as certainly new.
func TestBoundedDedupBoundsUnstored(t *testing.T) {
	d := NewDedup(24 * time.Hour)
	d.Limit(1024, 1<<20)
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 50_000; i++ {
		d.Reserve("m", strconv.Itoa(i), t0)
	}
	if st := d.Stats(); st.ExactIDs > 2*1024 || st.FilterIDs < 45_000 {
		t.Fatalf("%+v: the exact table grew with the ids not stored", st)
	}
	for i := 0; i < 50_000; i++ {
		if ok, maybe := d.Admit("m", strconv.Itoa(i), t0.Add(time.Hour)); ok && !maybe {
			t.Fatalf("unstored id %d accepted as certainly new", i)
		}
	}
}

// TestAdmitAllIsAdmitInTurn: admitting a payload's ids shard by shard
// answers, id by id, what Admit in the payload's order answers (repeats
// within the payload, evictions to the filter and its "maybe" included).
// A payload brings 200 new ids, 100 of which come back in the next, ids
// of 60 payloads before (evicted from the exact table long since: the
// filter's "maybe"), and one id twice. The filter is large enough that it
// answers no false "maybe": one would depend on the order in which other
// shards' ids reach it, which AdmitAll changes, and is harmless (the
// flusher checks it in ClickHouse).
func TestAdmitAllIsAdmitInTurn(t *testing.T) {
	one, all := NewDedup(24*time.Hour), NewDedup(24*time.Hour)
	all.seed = one.seed
	one.Limit(4096, 64<<20)
	all.Limit(4096, 64<<20)
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var maybes, dups int
	for p := range 400 {
		now := t0.Add(time.Duration(p) * time.Second)
		ids := make([]string, 300)
		for i := range 200 {
			ids[i] = strconv.Itoa(p*100 + i) // the second half comes back in the next payload
		}
		for i := 200; i < 299; i++ {
			ids[i] = strconv.Itoa(max(0, p-60)*100 + i - 200) // gone from the exact table
		}
		ids[len(ids)-1] = ids[0] // and one within the payload
		ok, maybe := make([]bool, len(ids)), make([]bool, len(ids))
		all.AdmitAll("m", ids, now, ok, maybe)
		for i, id := range ids {
			wantOK, wantMaybe := one.Admit("m", id, now)
			if ok[i] != wantOK || maybe[i] != wantMaybe {
				t.Fatalf("payload %d, id %s: AdmitAll %v/%v, Admit %v/%v", p, id, ok[i], maybe[i], wantOK, wantMaybe)
			}
			if !wantOK {
				dups++
			}
			if wantMaybe {
				maybes++
			}
		}
	}
	if dups == 0 || maybes == 0 {
		t.Fatalf("the payloads exercised too little: %d duplicates, %d maybes", dups, maybes)
	}
}
