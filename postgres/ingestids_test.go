package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestIngestIDsReserveReleaseExpire(t *testing.T) {
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour, 0)
	now := time.Now().Truncate(time.Microsecond)
	mcp := fmt.Sprintf("mcp-%d", now.UnixNano())

	fresh, busy, err := r.Reserve(ctx, mcp, []string{"a", "b", "it's"}, now)
	if err != nil || len(fresh) != 3 || len(busy) != 0 {
		t.Fatalf("first reserve: %v, %v, %v", fresh, busy, err)
	}
	if own, err := r.Confirm(ctx, mcp, []string{"a", "b", "it's"}, now); err != nil || len(own) != 3 {
		t.Fatalf("confirm: %v, %v", own, err)
	}
	fresh, busy, err = r.Reserve(ctx, mcp, []string{"a", "c"}, now.Add(time.Second))
	if err != nil || !slices.Equal(fresh, []string{"c"}) || len(busy) != 0 {
		t.Fatalf("second reserve = %v, %v, %v; want only c fresh, nothing busy (a is accepted)", fresh, busy, err)
	}
	if fresh, _, _ := r.Reserve(ctx, "other-"+mcp, []string{"a"}, now); len(fresh) != 1 {
		t.Fatalf("ids are per MCP: %v", fresh)
	}
	// Release removes only the reservation made at that time.
	if err := r.Release(ctx, mcp, []string{"a", "c"}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if fresh, _, _ := r.Reserve(ctx, mcp, []string{"a", "c"}, now.Add(2*time.Second)); !slices.Equal(fresh, []string{"c"}) {
		t.Fatalf("after release: %v, want c only (a's reservation is older)", fresh)
	}
	r.Confirm(ctx, mcp, []string{"c"}, now.Add(2*time.Second))
	// A day later the ids are new again, before and after Expire.
	later := now.Add(24*time.Hour + 3*time.Second)
	if fresh, _, _ := r.Reserve(ctx, mcp, []string{"a"}, later); len(fresh) != 1 {
		t.Fatalf("a day later: %v", fresh)
	}
	n, err := r.Expire(ctx, later, 1000)
	if err != nil || n < 3 {
		t.Fatalf("Expire = %d, %v; want b, it's and c's reservations gone at least", n, err)
	}
	if fresh, _, _ := r.Reserve(ctx, mcp, []string{"a", "b"}, later); !slices.Equal(fresh, []string{"b"}) {
		t.Fatalf("after expiry: %v, want b only", fresh)
	}
}

// A reservation is not an acceptance: while pending it is busy for every
// other reservation; unconfirmed past its pending time, the next one takes
// it over, and the first holder's late confirmation finds it is not its
// own any more. Confirm also reserves ids nobody holds.
func TestIngestIDsPending(t *testing.T) {
	db := testDB(t)
	ctx := context.Background()
	r := NewIngestIDs(db, 24*time.Hour, 400*time.Millisecond)
	now := time.Now().Truncate(time.Microsecond)
	mcp := fmt.Sprintf("mcp-pending-%d", now.UnixNano())
	first, second := now, now.Add(time.Millisecond)

	if fresh, busy, err := r.Reserve(ctx, mcp, []string{"x", "y"}, first); err != nil || len(fresh) != 2 || len(busy) != 0 {
		t.Fatalf("reserve: %v %v %v", fresh, busy, err)
	}
	if fresh, busy, err := r.Reserve(ctx, mcp, []string{"x", "y", "z"}, second); err != nil ||
		!slices.Equal(fresh, []string{"z"}) || !slices.Equal(busy, []string{"x", "y"}) {
		t.Fatalf("reserve while pending = fresh %v busy %v (%v); want z fresh, x and y busy", fresh, busy, err)
	}
	if own, err := r.Confirm(ctx, mcp, []string{"y"}, first); err != nil || !slices.Equal(own, []string{"y"}) {
		t.Fatalf("confirm y: %v %v", own, err)
	}
	time.Sleep(600 * time.Millisecond) // x's pending time passes
	third := now.Add(2 * time.Millisecond)
	if fresh, busy, err := r.Reserve(ctx, mcp, []string{"x", "y"}, third); err != nil ||
		!slices.Equal(fresh, []string{"x"}) || len(busy) != 0 {
		t.Fatalf("reserve after expiry = fresh %v busy %v (%v); want x taken over, y accepted", fresh, busy, err)
	}
	if own, err := r.Confirm(ctx, mcp, []string{"x"}, first); err != nil || len(own) != 0 {
		t.Fatalf("late confirm by the first holder = %v %v; want nothing (taken over)", own, err)
	}
	if own, err := r.Confirm(ctx, mcp, []string{"x", "w"}, third); err != nil || !slices.Equal(own, []string{"w", "x"}) {
		t.Fatalf("confirm by the new holder = %v %v; want w (nobody held it) and x", own, err)
	}
}

// Concurrent reservations of the same ids: each id goes to exactly one.
func TestIngestIDsConcurrent(t *testing.T) {
	db := testDB(t)
	r := NewIngestIDs(db, 24*time.Hour, 0)
	mcp := fmt.Sprintf("mcp-race-%d", time.Now().UnixNano())
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = fmt.Sprint("id", i)
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			fresh, _, err := r.Reserve(context.Background(), mcp, ids, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, id := range fresh {
				got[id]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("%s reserved %d times", id, got[id])
		}
	}
}
