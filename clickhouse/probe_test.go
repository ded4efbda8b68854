package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/clickhouse"
)

// Probe results go in, come back newest first page by page, count in
// the uptime, and old days are dropped.
func TestProbeResults(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	var rows []clickhouse.ProbeResultRow
	for i := range 5 {
		c := alerting.ProbeCheck{At: now.Add(-time.Duration(i) * time.Minute).Add(123 * time.Millisecond), OK: i != 1, LatencyMs: 12.5,
			ProtocolVersion: "2026-07-28", SchemaHash: "abc"}
		if !c.OK {
			c.ErrorKind, c.Error = alerting.ProbeErrConnect, "connection refused"
		}
		rows = append(rows, clickhouse.ProbeResultRow{AccountID: "acc", MCPID: "mcp_1", ProbeID: "prb_1", Check: c})
	}
	rows = append(rows, clickhouse.ProbeResultRow{AccountID: "acc", MCPID: "mcp_1", ProbeID: "prb_1",
		Check: alerting.ProbeCheck{At: now.AddDate(0, 0, -40), OK: true}})
	if err := db.InsertProbeResults(ctx, rows); err != nil {
		t.Fatal(err)
	}
	f := alerting.ProbeResultFilter{From: now.Add(-time.Hour), To: now.Add(time.Second), Limit: 3}
	page, err := db.ProbeResults(ctx, "mcp_1", "prb_1", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 3 || page.NextCursor == nil || !page.Items[0].At.Equal(now.Add(123*time.Millisecond)) || page.Items[1].Status != "down" ||
		*page.Items[1].Error != "connect: connection refused" {
		t.Fatalf("page %+v", page)
	}
	f.Cursor = *page.NextCursor
	if page, err = db.ProbeResults(ctx, "mcp_1", "prb_1", f); err != nil || len(page.Items) != 2 || page.NextCursor != nil {
		t.Fatalf("second page %+v %v", page, err)
	}
	up, err := db.ProbeUptimes(ctx, []string{"mcp_1"}, []string{"prb_1"}, now.Add(time.Second))
	if err != nil || up["prb_1"].Day == nil || *up["prb_1"].Day != 0.8 || *up["prb_1"].Month != 0.8 {
		t.Fatalf("uptime %+v %v", up, err)
	}
	// The one failed check is one five-minute step with failures.
	steps, err := db.ProbeDownBuckets(ctx, "mcp_1", now.Add(-time.Hour), now.Add(time.Second))
	if err != nil || len(steps) != 1 || steps[0].Checks != 1 || !steps[0].First.Equal(now.Add(-time.Minute)) ||
		steps[0].Error != "connect: connection refused" || steps[0].Start.After(steps[0].First) {
		t.Fatalf("down steps %+v %v", steps, err)
	}
	if err := db.DropProbeResultsBefore(ctx, now.AddDate(0, 0, -30)); err != nil {
		t.Fatal(err)
	}
	page, err = db.ProbeResults(ctx, "mcp_1", "prb_1", alerting.ProbeResultFilter{From: now.AddDate(0, 0, -41), To: now.AddDate(0, 0, -39), Limit: 10})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("old day kept: %+v %v", page, err)
	}
}
