package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// bruteNightly computes the nightly figures of one MCP for day straight
// from the rows, by the contract's definitions.
func bruteNightly(rows []analytics.StoredRow, mcp string, day time.Time) analytics.Nightly {
	daysOf := map[string]map[int]bool{} // user -> day offsets (0 = day, 27 = first day of the window)
	for _, r := range rows {
		off := int(day.Sub(analytics.UTCDay(r.Item.Timestamp)) / (24 * time.Hour))
		if r.MCPID != mcp || off < 0 || off > 27 {
			continue
		}
		u := clickhouse.UserKey(r.Item.UserID, r.Item.SessionID)
		if daysOf[u] == nil {
			daysOf[u] = map[int]bool{}
		}
		daysOf[u][off] = true
	}
	var users, userDays, cohort, retained int64
	for _, days := range daysOf {
		users++
		userDays += int64(len(days))
		inCohort, back := false, false
		for off := range days {
			inCohort = inCohort || (off >= 7 && off <= 13)
			back = back || off <= 6
		}
		if inCohort {
			cohort++
			if back {
				retained++
			}
		}
	}
	n := analytics.Nightly{ActiveUsers28d: &users, Stickiness: new(float64)}
	if users > 0 {
		*n.Stickiness = float64(userDays) / 28 / float64(users)
	}
	if cohort > 0 {
		v := float64(retained) / float64(cohort)
		n.Retention7d = &v
	}
	return n
}

func checkNightly(t *testing.T, db *clickhouse.DB, rows []analytics.StoredRow, mcp string, day time.Time) {
	t.Helper()
	got, asOf, err := db.Nightly(context.Background(), mcp)
	if err != nil {
		t.Fatal(err)
	}
	if asOf == nil || *asOf != day.Format(analytics.DateLayout) {
		t.Fatalf("%s: as of %v, want %s", mcp, asOf, day.Format(analytics.DateLayout))
	}
	want := bruteNightly(rows, mcp, day)
	if got.ActiveUsers28d == nil || *got.ActiveUsers28d != *want.ActiveUsers28d {
		t.Errorf("%s %s active users = %v, want %d", mcp, *asOf, got.ActiveUsers28d, *want.ActiveUsers28d)
	}
	eqPtr(t, mcp+" "+*asOf+" stickiness", got.Stickiness, want.Stickiness)
	eqPtr(t, mcp+" "+*asOf+" retention", got.Retention7d, want.Retention7d)
}

func TestNightly(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.NightlyLastDay(ctx); ok || err != nil {
		t.Fatalf("last day before any pass: %v %v", ok, err)
	}
	n, asOf, err := db.Nightly(ctx, mcpA)
	if err != nil || asOf != nil || n.ActiveUsers28d != nil || n.Stickiness != nil || n.Retention7d != nil {
		t.Fatalf("before the first pass: %+v %v %v", n, asOf, err)
	}

	last := day0.AddDate(0, 0, 6) // 03-07: window 02-08..03-07, cohort 02-22..02-28
	mcps, err := db.ComputeNightly(ctx, last.Add(15*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if mcps != 3 {
		t.Errorf("pass covered %d MCPs, want 3", mcps)
	}
	for _, mcp := range []string{mcpA, mcpB, mcpC, "mcp-none"} {
		checkNightly(t, db, rows, mcp, last)
	}
	// Hand-checked mcp-a retention: the cohort is u-ret1, u-ret2 (02-25)
	// and u-mid (02-28 23:59:59.999); u-ret1 and u-mid came back.
	a, _, _ := db.Nightly(ctx, mcpA)
	if a.Retention7d == nil || *a.Retention7d != 2.0/3 {
		t.Errorf("mcp-a retention = %v, want 2/3", fmtPtr(a.Retention7d))
	}
	// mcp-b has users but no cohort: retention is null, not 0.
	if b, _, _ := db.Nightly(ctx, mcpB); b.Retention7d != nil || *b.ActiveUsers28d != 1 || *b.Stickiness != 1.0/28 {
		t.Errorf("mcp-b nightly = %+v", b)
	}
	if d, ok, err := db.NightlyLastDay(ctx); !ok || err != nil || !d.Equal(last) {
		t.Errorf("last day = %v %v %v", d, ok, err)
	}

	// An older day run by hand does not move the last day.
	if _, err := db.ComputeNightly(ctx, last.AddDate(0, 0, -2)); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := db.NightlyLastDay(ctx); !d.Equal(last) {
		t.Errorf("last day after an older run = %v", d)
	}

	// A re-run after more data replaces the figures (before any merge).
	var more []analytics.StoredRow
	for i := 0; i < 6; i++ {
		s := itemSpec{account: acct2, mcp: mcpC, ts: last.AddDate(0, 0, -8-i%3), session: fmt.Sprintf("c-n%d", i),
			method: analytics.MethodToolsCall, name: "other", user: fmt.Sprintf("cu%d", i%4)}
		more = append(more, s.row(uint64(1000+i)))
		s.ts = last.AddDate(0, 0, -i%2)
		more = append(more, s.row(uint64(2000+i)))
	}
	if err := db.InsertRows(ctx, more); err != nil {
		t.Fatal(err)
	}
	rows = append(rows, more...)
	for run := 0; run < 2; run++ {
		if _, err := db.ComputeNightly(ctx, last); err != nil {
			t.Fatal(err)
		}
		for _, mcp := range []string{mcpA, mcpB, mcpC} {
			checkNightly(t, db, rows, mcp, last)
		}
	}

	// A day with no data anywhere: zeros, no retention, as of that day.
	empty := day0.AddDate(0, 3, 0)
	if mcps, err := db.ComputeNightly(ctx, empty); err != nil || mcps != 0 {
		t.Fatalf("empty day: %d %v", mcps, err)
	}
	n, asOf, _ = db.Nightly(ctx, mcpA)
	if *asOf != empty.Format(analytics.DateLayout) || *n.ActiveUsers28d != 0 || *n.Stickiness != 0 || n.Retention7d != nil {
		t.Errorf("after an empty day: %+v %v", n, *asOf)
	}
	// The overview carries the same figures.
	o, err := db.Overview(ctx, mcpA, week)
	if err != nil || o.NightlyAsOf == nil || *o.NightlyAsOf != *asOf || *o.Nightly.ActiveUsers28d != 0 {
		t.Errorf("overview nightly = %+v %v %v", o.Nightly, o.NightlyAsOf, err)
	}
}
