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
	r := NewIngestIDs(db, 24*time.Hour)
	now := time.Now().Truncate(time.Microsecond)
	mcp := fmt.Sprintf("mcp-%d", now.UnixNano())

	fresh, err := r.Reserve(ctx, mcp, []string{"a", "b", "it's"}, now)
	if err != nil || len(fresh) != 3 {
		t.Fatalf("first reserve: %v, %v", fresh, err)
	}
	fresh, err = r.Reserve(ctx, mcp, []string{"a", "c"}, now.Add(time.Second))
	if err != nil || !slices.Equal(fresh, []string{"c"}) {
		t.Fatalf("second reserve = %v, %v; want only c", fresh, err)
	}
	if fresh, _ := r.Reserve(ctx, "other-"+mcp, []string{"a"}, now); len(fresh) != 1 {
		t.Fatalf("ids are per MCP: %v", fresh)
	}
	// Release removes only the reservation made at that time.
	if err := r.Release(ctx, mcp, []string{"a", "c"}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if fresh, _ := r.Reserve(ctx, mcp, []string{"a", "c"}, now.Add(2*time.Second)); !slices.Equal(fresh, []string{"c"}) {
		t.Fatalf("after release: %v, want c only (a's reservation is older)", fresh)
	}
	// A day later the ids are new again, before and after Expire.
	later := now.Add(24*time.Hour + 3*time.Second)
	if fresh, _ := r.Reserve(ctx, mcp, []string{"a"}, later); len(fresh) != 1 {
		t.Fatalf("a day later: %v", fresh)
	}
	n, err := r.Expire(ctx, later, 1000)
	if err != nil || n < 3 {
		t.Fatalf("Expire = %d, %v; want b, it's and c's reservations gone at least", n, err)
	}
	if fresh, _ := r.Reserve(ctx, mcp, []string{"a", "b"}, later); !slices.Equal(fresh, []string{"b"}) {
		t.Fatalf("after expiry: %v, want b only", fresh)
	}
}

// Concurrent reservations of the same ids: each id goes to exactly one.
func TestIngestIDsConcurrent(t *testing.T) {
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
	for range 8 {
		wg.Go(func() {
			fresh, err := r.Reserve(context.Background(), mcp, ids, time.Now())
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
