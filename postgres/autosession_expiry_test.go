package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// Late items through PostgreSQL: an identity with 16 newer sessions, then
// 10 items 30 s apart an hour before them, each in a payload of its own
// (a buffer drained late), get one session, kept in auto_sessions with
// the 16 most recently used.
func TestAutoSessionsLateItems(t *testing.T) {
	t.Parallel()
	f := newFixture(t, accounts.AuthPolicy{})
	ctx := context.Background()
	s := f.signup(t, "autolate")
	m, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAutoSessions(f.db)
	t0 := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Minute)
	assign := func(ts time.Time) string {
		t.Helper()
		items := []analytics.Item{{ID: "x", Timestamp: ts, UserID: "u-1"}}
		if err := a.AssignSessions(ctx, m.ID, items); err != nil {
			t.Fatal(err)
		}
		return items[0].SessionID
	}
	for i := range analytics.MaxKeptSessions {
		assign(t0.Add(time.Duration(i) * time.Hour))
	}
	late := map[string]bool{}
	for i := range 10 {
		late[assign(t0.Add(-time.Hour+time.Duration(i)*30*time.Second))] = true
	}
	if want := analytics.AutoSessionID(m.ID, "u:u-1", t0.Add(-time.Hour)); len(late) != 1 || !late[want] {
		t.Fatalf("10 late items went into %d sessions %v, want 1 (%s)", len(late), late, want)
	}
	starts := storedStarts(t, f.db, m.ID, "u:u-1")
	if len(starts) != analytics.MaxKeptSessions || !starts[0].Equal(t0.Add(-time.Hour)) {
		t.Errorf("stored %d starts from %s, want %d with the late session", len(starts), starts[0], analytics.MaxKeptSessions)
	}
}

// Expiry: an identity idle longer than its account's retention (the
// installation's where the account sets none), or than SessionStateTTL
// when the retention is longer or forever, loses its state; others keep
// theirs, and a placement after expiry starts afresh. A person's deletion
// request deletes their state at once, and no one else's.
func TestAutoSessionsExpiryAndDeletion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, accounts.AuthPolicy{})
	ctx := context.Background()
	s1, s2 := f.signup(t, "expiry1"), f.signup(t, "expiry2")
	m1, err := f.mcps.CreateMCP(ctx, s1.Account.ID, accounts.NewMCP{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := f.mcps.CreateMCP(ctx, s2.Account.ID, accounts.NewMCP{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE accounts SET retention_days = 3 WHERE id = $1`, s2.Account.ID); err != nil {
		t.Fatal(err)
	}
	a := NewAutoSessions(f.db)
	ts := time.Now().UTC().Add(-time.Hour)
	for _, c := range []struct{ mcp, user string }{{m1.ID, "u-1"}, {m1.ID, "u-2"}, {m1.ID, "u-3"}, {m2.ID, "u-1"}, {m2.ID, "u-2"}} {
		if err := a.AssignSessions(ctx, c.mcp, []analytics.Item{{ID: "x", Timestamp: ts, UserID: c.user}}); err != nil {
			t.Fatal(err)
		}
	}
	idleFor := func(mcp, user string, days int) {
		t.Helper()
		if _, err := f.db.Pool.Exec(ctx, `UPDATE auto_sessions SET used_at = now() - make_interval(days => $3)
			WHERE mcp_id = $1 AND identity = $2`, mcp, identityHash("u:"+user), days); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() map[string]bool {
		t.Helper()
		out := map[string]bool{}
		for _, mcp := range []string{m1.ID, m2.ID} {
			for _, u := range []string{"u-1", "u-2", "u-3"} {
				var n int
				if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM auto_sessions WHERE mcp_id = $1 AND identity = $2`,
					mcp, identityHash("u:"+u)).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					out[mcp+"/"+u] = true
				}
			}
		}
		return out
	}
	// Installation keeps forever: m1's u-1 idle 32 days (past the TTL of
	// 31) goes, u-2 idle 20 days stays; m2's account keeps 3 days: u-1
	// idle 4 days goes, u-2 idle 2 days stays.
	idleFor(m1.ID, "u-1", 32)
	idleFor(m1.ID, "u-2", 20)
	idleFor(m2.ID, "u-1", 4)
	idleFor(m2.ID, "u-2", 2)
	n, err := f.db.ExpireSessions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{m1.ID + "/u-2": true, m1.ID + "/u-3": true, m2.ID + "/u-2": true}
	if got := kept(); n != 2 || len(got) != len(want) || !got[m1.ID+"/u-2"] || !got[m1.ID+"/u-3"] || !got[m2.ID+"/u-2"] {
		t.Fatalf("expired %d, kept %v; want 2 expired, kept %v", n, got, want)
	}
	// The installation keeps 10 days: m1's u-2 (20 days) goes too.
	if n, err := f.db.ExpireSessions(ctx, 10); err != nil || n != 1 || kept()[m1.ID+"/u-2"] {
		t.Fatalf("expired %d (%v), kept %v", n, err, kept())
	}
	// An expired identity placed again starts afresh.
	if err := a.AssignSessions(ctx, m1.ID, []analytics.Item{{ID: "x", Timestamp: ts, UserID: "u-1"}}); err != nil || !kept()[m1.ID+"/u-1"] {
		t.Fatalf("placed again: %v, kept %v", err, kept())
	}

	// DELETE /v1/mcps/{id}/users/{user_id}: the person's state goes with
	// the request, in that MCP only.
	if err := a.AssignSessions(ctx, m2.ID, []analytics.Item{{ID: "x", Timestamp: ts, UserID: "u-3"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDeletionService(f.db).RequestUserDeletion(ctx, s1.Account.ID, m1.ID, "u-3"); err != nil {
		t.Fatal(err)
	}
	got := kept()
	if got[m1.ID+"/u-3"] || !got[m2.ID+"/u-3"] || !got[m1.ID+"/u-1"] {
		t.Errorf("after deleting m1's u-3: kept %v", got)
	}
}
