package analytics

import (
	"testing"
	"time"
)

// Place, table-driven: in-order items split at gaps longer than idle, late
// items within idle of the session join it, older ones stand alone.
func TestSessionStatePlace(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	idle := 30 * time.Minute
	m := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
	var s SessionState
	for i, c := range []struct {
		at, wantStart time.Time
		sessions      int
	}{
		{m(0), m(0), 1},
		{m(30), m(0), 1},    // a gap of exactly idle: same session
		{m(61), m(61), 2},   // 31 minutes: a new one
		{m(45), m(61), 2},   // late, within idle of both: the latest session
		{m(20), m(0), 2},    // late, inside the first session
		{m(-40), m(-40), 3}, // late by more than idle before the first: its own
		{m(70), m(61), 3},
	} {
		if start := s.Place(c.at, idle); !start.Equal(c.wantStart) || len(s.Sessions) != c.sessions {
			t.Fatalf("item %d at %s: start %s, %d sessions; want %s, %d", i, c.at, start, len(s.Sessions), c.wantStart, c.sessions)
		}
	}
	if s.Sessions[0].Start != m(-40) || s.Sessions[1].LastSeen != m(30) || s.Sessions[2].LastSeen != m(70) {
		t.Errorf("state %+v", s.Sessions)
	}
	for i := 0; i < 2*MaxKeptSessions; i++ {
		s.Place(m(200+60*i), idle)
	}
	if len(s.Sessions) != MaxKeptSessions || s.Sessions[MaxKeptSessions-1].Start != m(200+60*(2*MaxKeptSessions-1)) {
		t.Errorf("kept %d sessions, last %+v", len(s.Sessions), s.Sessions[len(s.Sessions)-1])
	}
	a := AutoSessionID("mcp_1", "u:u-1", m(0))
	if a != AutoSessionID("mcp_1", "u:u-1", m(0).Add(time.Nanosecond)) || a == AutoSessionID("mcp_2", "u:u-1", m(0)) ||
		a == AutoSessionID("mcp_1", "u:u-2", m(0)) || a == AutoSessionID("mcp_1", "u:u-1", m(1)) || len(a) != len(AutoSessionPrefix)+24 {
		t.Errorf("ids: %s", a)
	}
	if SessionIdentity(&Item{UserID: "x", ClientName: "c"}) != "u:x" ||
		SessionIdentity(&Item{ClientName: "a b", ClientVersion: "1"}) == SessionIdentity(&Item{ClientName: "a", ClientVersion: "b 1"}) {
		t.Error("identities")
	}
}

// Merge: the union of two copies of one identity's state placed apart; a
// session in both keeps its start and the latest of its two last items;
// the latest MaxKeptSessions stay; placing into the merged state joins the
// session the items of both copies extended.
func TestSessionStateMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	idle := 30 * time.Minute
	m := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
	var shared SessionState
	shared.Place(m(0), idle)
	shared.Place(m(20), idle)
	local := shared.Clone()
	// Apart: the local copy extends the session to 10:45 and begins one
	// at 12:00; the shared one, placed elsewhere, begins one at 11:00.
	local.Place(m(45), idle)
	local.Place(m(120), idle)
	shared.Place(m(100), idle)
	if len(shared.Sessions) != 2 || shared.Sessions[0].LastSeen != m(20) {
		t.Fatalf("the clone shares the shared state: %+v", shared.Sessions)
	}
	shared.Merge(local)
	want := []SessionSpan{{m(0), m(45)}, {m(100), m(100)}, {m(120), m(120)}}
	if len(shared.Sessions) != len(want) {
		t.Fatalf("merged %+v, want %+v", shared.Sessions, want)
	}
	for i := range want {
		if shared.Sessions[i] != want[i] {
			t.Errorf("merged session %d: %+v, want %+v", i, shared.Sessions[i], want[i])
		}
	}
	// Merging again, either way round, changes nothing.
	again := shared.Clone()
	again.Merge(local)
	local.Merge(shared)
	for i := range want {
		if again.Sessions[i] != want[i] || local.Sessions[i] != want[i] {
			t.Errorf("merge is not idempotent: %+v, %+v", again.Sessions, local.Sessions)
			break
		}
	}
	// 11:00 is within idle of the first session's latest item (10:45)
	// only in the merged state: it joins that session, begun at 10:00.
	if start := shared.Place(m(60), idle); start != m(0) {
		t.Errorf("placed at %s, want %s", start, m(0))
	}
	var older, newer SessionState
	for i := range MaxKeptSessions {
		older.Place(m(60*i), idle)
		newer.Place(m(60*(i+MaxKeptSessions)), idle)
	}
	older.Merge(newer)
	if len(older.Sessions) != MaxKeptSessions || older.Sessions[0].Start != m(60*MaxKeptSessions) {
		t.Errorf("kept %d sessions from %s", len(older.Sessions), older.Sessions[0].Start)
	}
}
