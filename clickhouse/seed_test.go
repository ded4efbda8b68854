package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
)

func TestSeedHistory(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	end := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	var progress []int64
	opt := chtest.SeedOptions{Events: 5000, Days: 3, End: end, MCPs: 4, BigMCPShare: 0.5, BatchSize: 1500,
		Progress: func(done, total int64) {
			if total != 5000 {
				t.Errorf("progress total %d", total)
			}
			progress = append(progress, done)
		}}
	if err := chtest.SeedHistory(ctx, db, opt); err != nil {
		t.Fatal(err)
	}
	if len(progress) != 4 || progress[3] != 5000 {
		t.Errorf("progress = %v", progress)
	}
	r := analytics.NewRange(end.AddDate(0, 0, -2), end)
	var total int64
	for i, id := range []string{"seed-mcp-0000", "seed-mcp-0001", "seed-mcp-0002", "seed-mcp-0003"} {
		o, err := db.Overview(ctx, id, r)
		if err != nil {
			t.Fatal(err)
		}
		total += o.Calls
		if o.Calls == 0 || o.Errors == 0 || o.Sessions == 0 || o.Users == 0 || o.P95Ms == nil || *o.P95Ms <= *o.P50Ms {
			t.Errorf("%s overview = %+v", id, o)
		}
		if i == 0 && (o.Calls < 1750 || o.Calls > 3250) {
			t.Errorf("big MCP has %d of 5000 calls, want about half", o.Calls)
		}
		for _, d := range o.Series {
			if d.Calls == 0 {
				t.Errorf("%s: no calls on %s: events must spread over every day", id, d.Date)
			}
		}
	}
	if total != 5000 {
		t.Errorf("the rollups hold %d calls, want 5000", total)
	}
	// Received up to 2 s after their timestamp: the day after may hold a few.
	u, err := db.Usage(ctx, "seed-account", analytics.NewRange(r.From, r.To.AddDate(0, 0, 1)), nil)
	if err != nil || u.Events != 5000 {
		t.Errorf("usage = %d events, %v", u.Events, err)
	}
	tools, _ := db.Tools(ctx, "seed-mcp-0000", r)
	if len(tools.Items) < 5 || tools.Items[0].Name != "search_docs" {
		t.Errorf("big MCP tools = %+v", tools.Items)
	}
	page, _ := db.Sessions(ctx, "seed-mcp-0000", r, 10, "")
	if len(page.Items) != 10 || page.NextCursor == nil {
		t.Fatalf("sessions page = %+v", page)
	}
	for _, s := range page.Items {
		if s.Calls < 1 || s.Calls > 16 || s.ClientName == nil {
			t.Errorf("seeded session %+v", s)
		}
	}
	if err := chtest.SeedHistory(ctx, db, chtest.SeedOptions{Events: 10, Days: 1, MCPs: 2, MCPIDs: []string{"x"}}); err == nil {
		t.Error("mismatched MCP ids accepted")
	}
}

// BenchmarkSeedHistory measures server-side generation through every
// rollup view, 1M events per op in 200k batches.
func BenchmarkSeedHistory(b *testing.B) {
	db := openTestDB(b)
	ctx := context.Background()
	const events = 1_000_000
	for n := 0; n < b.N; n++ {
		if err := chtest.SeedHistory(ctx, db, chtest.SeedOptions{Events: events, Days: 30, MCPs: 50, BigMCPShare: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "rows/s")
}
