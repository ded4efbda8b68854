package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// TestInventoryConcurrentReports applies the same new tool set from eight
// goroutines at once (instances receiving one deployment's reports): each
// tool is added once; then windows count the changes per tool and in all.
func TestInventoryConcurrentReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, accounts.AuthPolicy{})
	ctx := context.Background()
	s := f.signup(t, "inv")
	m, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	inv := NewInventoryService(f.db)
	hash := func(c byte) string {
		b := make([]byte, 64)
		for i := range b {
			b[i] = c
		}
		return string(b)
	}
	report := analytics.InventoryReport{ServerVersion: "1", Tools: []analytics.InventoryReportTool{{Name: "a", SchemaHash: hash('a')}, {Name: "b", SchemaHash: hash('b')}}}
	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Microsecond)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := inv.RecordInventory(ctx, m.ID, t0.Add(time.Duration(i)*time.Millisecond), report)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Five minutes later, a changed a and no b.
	report2 := analytics.InventoryReport{ServerVersion: "2", Tools: []analytics.InventoryReportTool{{Name: "a", SchemaHash: hash('c')}}}
	if _, err := inv.RecordInventory(ctx, m.ID, t0.Add(5*time.Minute), report2); err != nil {
		t.Fatal(err)
	}
	got, err := inv.Inventory(ctx, m.ID, analytics.NewRange(t0, t0))
	if err != nil {
		t.Fatal(err)
	}
	var changes string
	for _, c := range got.Changes {
		changes += fmt.Sprintf("%s %s %s;", c.Kind, c.Tool, *c.ServerVersion)
	}
	if changes != "removed b 2;changed a 2;added b 1;added a 1;" {
		t.Fatalf("changes %s", changes)
	}
	// First seen: the time of the report applied first.
	first := *got.Tools[0].FirstSeenAt
	if len(got.Tools) != 2 || *got.Tools[0].SchemaHash != hash('c') || first.Before(t0) || !first.Before(t0.Add(8*time.Millisecond)) ||
		!got.Tools[0].LastSeenAt.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("tools %+v", got.Tools)
	}
	// Windows ending now: 8 minutes holds the second report's two changes,
	// 15 minutes all four.
	counts, err := inv.ToolChangeCounts(ctx, t0.Add(10*time.Minute), map[string]analytics.WindowRequest{m.ID: {Minutes: []int{8, 15}}, "mcp_none": {Minutes: []int{15}}})
	if err != nil {
		t.Fatal(err)
	}
	// Graded: the changed a (no schemas) risky, the removed b breaking.
	c := func(all, breaking, risky int64) analytics.ToolChangeCount {
		return analytics.ToolChangeCount{All: all, Breaking: breaking, Risky: risky}
	}
	if w := counts[m.ID]; w[8][""] != c(2, 1, 1) || w[8]["a"] != c(1, 0, 1) || w[8]["b"] != c(1, 1, 0) || w[15][""] != c(4, 1, 1) ||
		w[15]["a"] != c(2, 0, 1) || len(counts) != 1 {
		t.Fatalf("counts %v", counts)
	}
}
