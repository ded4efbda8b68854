package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestNightlyCommandAndCatchUp ingests activity on known days through the
// API, runs `telemetryd nightly` for yesterday and checks the figures the
// overview then shows; then checks the catch-up computes exactly the
// missed days, under the advisory lock.
func TestNightlyCommandAndCatchUp(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	m, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, key := a.newTenant("nightly")

	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.AddDate(0, 0, -1)
	at := func(daysBeforeYesterday int) string {
		return yesterday.AddDate(0, 0, -daysBeforeYesterday).Add(12 * time.Hour).Format(time.RFC3339)
	}
	item := func(user, ts string) map[string]any {
		return map[string]any{"timestamp": ts, "session_id": "s-" + user, "user_id": user, "method": "tools/call", "name": "t"}
	}
	// u1 and u2 are active 9 days before yesterday (in the earlier week);
	// u1 and u3 one day before yesterday (in the last week).
	status, res := postIngest(t, base, key, []map[string]any{
		item("u1", at(9)), item("u2", at(9)), item("u1", at(1)), item("u3", at(1)),
	}, false)
	if status != 202 || num(res["accepted"]) != 4 {
		t.Fatalf("ingest: %d %v", status, res)
	}
	rng := "?from=" + yesterday.AddDate(0, 0, -9).Format(time.DateOnly) + "&to=" + today.Format(time.DateOnly)
	eventually(t, 5*time.Second, func() error {
		if ov := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview"+rng, token, nil); num(ov["calls"]) != 4 {
			return fmt.Errorf("calls %v", ov["calls"])
		}
		// The overview's rollup can show the rows while the insert still
		// feeds the others (user_daily among them): wait for its end.
		if n := m.Ingest.Stats().UnackedRecords; n != 0 {
			return fmt.Errorf("%d records not flushed yet", n)
		}
		return nil
	})

	var out bytes.Buffer
	ctx := context.Background()
	if err := m.RunNightlyCommand(ctx, yesterday.Format(time.DateOnly), "", "", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[1/1] "+yesterday.Format(time.DateOnly)) {
		t.Errorf("progress output: %q", out.String())
	}
	ov := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview", token, nil)
	n := ov["nightly"].(map[string]any)
	if ov["nightly_as_of"] != yesterday.Format(time.DateOnly) || num(n["active_users_28d"]) != 3 ||
		num(n["retention_7d"]) != 0.5 || math.Abs(num(n["stickiness"])-4.0/28/3) > 1e-9 {
		t.Errorf("nightly after the pass: %v as of %v", n, ov["nightly_as_of"])
	}
	// Idempotent: running the day again changes nothing.
	if err := m.RunNightlyCommand(ctx, yesterday.Format(time.DateOnly), "", "", &out); err != nil {
		t.Fatal(err)
	}
	if again := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview", token, nil)["nightly"].(map[string]any); num(again["active_users_28d"]) != 3 {
		t.Errorf("re-run changed the figures: %v", again)
	}

	// Catch-up: as if three more days had passed, the pass computes exactly
	// the days after the last one computed.
	var progress bytes.Buffer
	n3 := m.nightlyRunner(&progress, nil)
	n3.Log, n3.FirstPassDays = quiet, 30
	n3.Now = func() time.Time { return today.AddDate(0, 0, 3).Add(time.Hour) }
	days, err := n3.CatchUpDays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 3 || !days[0].Equal(today) || !days[2].Equal(today.AddDate(0, 0, 2)) {
		t.Fatalf("catch-up days %v, want %s and the two after", days, today.Format(time.DateOnly))
	}
	if err := n3.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if last, ok, err := m.CH.NightlyLastDay(ctx); err != nil || !ok || !last.Equal(today.AddDate(0, 0, 2)) {
		t.Fatalf("last day after catch-up: %v %v %v", last, ok, err)
	}
	if c := strings.Count(progress.String(), "MCPs in"); c != 3 {
		t.Errorf("catch-up ran %d days: %q", c, progress.String())
	}

	// Bad input to the command.
	for _, args := range [][3]string{{"2026-13-01", "", ""}, {"", "2026-11-10", "2026-11-01"}, {"2026-11-01", "2026-11-01", "2026-11-02"}, {"", "2026-11-01", ""}} {
		if err := m.RunNightlyCommand(ctx, args[0], args[1], args[2], &out); err == nil {
			t.Errorf("nightly %v: want an error", args)
		}
	}
}
