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
	clock := t0.Add(48 * time.Hour)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
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
		if start := s.Place(c.at, now(), idle); !start.Equal(c.wantStart) || len(s.Sessions) != c.sessions {
			t.Fatalf("item %d at %s: start %s, %d sessions; want %s, %d", i, c.at, start, len(s.Sessions), c.wantStart, c.sessions)
		}
	}
	if s.Sessions[0].Start != m(-40) || s.Sessions[1].LastSeen != m(30) || s.Sessions[2].LastSeen != m(70) {
		t.Errorf("state %+v", s.Sessions)
	}
	for i := 0; i < 2*MaxKeptSessions; i++ {
		s.Place(m(200+60*i), now(), idle)
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
	// Placed at 100 (then 101, ...) days after t0: the uses, u(n).
	u := func(n int) time.Time { return t0.Add(100*24*time.Hour + time.Duration(n)*time.Second) }
	var shared SessionState
	shared.Place(m(0), u(1), idle)
	shared.Place(m(20), u(2), idle)
	local := shared.Clone()
	// Apart: the local copy extends the session to 10:45 and begins one
	// at 12:00; the shared one, placed elsewhere, begins one at 11:00.
	local.Place(m(45), u(3), idle)
	local.Place(m(120), u(4), idle)
	shared.Place(m(100), u(5), idle)
	if len(shared.Sessions) != 2 || shared.Sessions[0].LastSeen != m(20) {
		t.Fatalf("the clone shares the shared state: %+v", shared.Sessions)
	}
	shared.Merge(local)
	want := []SessionSpan{{m(0), m(45), u(3)}, {m(100), m(100), u(5)}, {m(120), m(120), u(4)}}
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
	if start := shared.Place(m(60), u(6), idle); start != m(0) {
		t.Errorf("placed at %s, want %s", start, m(0))
	}
	// The most recently used sessions stay, whatever their starts.
	var older, newer SessionState
	for i := range MaxKeptSessions {
		older.Place(m(60*i), u(10+i), idle)
		newer.Place(m(60*(i+MaxKeptSessions)), u(100+i), idle)
	}
	backfilled := older.Clone()
	for i := range MaxKeptSessions {
		backfilled.Place(m(60*i), u(200+i), idle) // used again, after newer's
	}
	backfilled.Merge(newer)
	if len(backfilled.Sessions) != MaxKeptSessions || backfilled.Sessions[0].Start != m(0) {
		t.Errorf("kept %d sessions from %s, want the recently used ones from %s", len(backfilled.Sessions), backfilled.Sessions[0].Start, m(0))
	}
	older.Merge(newer)
	if len(older.Sessions) != MaxKeptSessions || older.Sessions[0].Start != m(60*MaxKeptSessions) {
		t.Errorf("kept %d sessions from %s", len(older.Sessions), older.Sessions[0].Start)
	}
}

// Late items older than every kept session (buffered, backfilled: up to
// MaxItemAge old are accepted) group by the idle rule: 16 sessions, then
// 10 items 30 s apart an hour before the first are one session, whichever
// order they come in, and it stays while the live traffic begins new
// sessions (the least recently used one goes).
func TestSessionStateLateItems(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	idle := 30 * time.Minute
	clock := t0.Add(48 * time.Hour)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	live := func(s *SessionState, from, n int) {
		for i := from; i < from+n; i++ {
			s.Place(t0.Add(time.Duration(i)*time.Hour), now(), idle)
			s.Place(t0.Add(time.Duration(i)*time.Hour+10*time.Minute), now(), idle)
		}
	}
	for _, reverse := range []bool{false, true} {
		var s SessionState
		live(&s, 0, MaxKeptSessions)
		if len(s.Sessions) != MaxKeptSessions {
			t.Fatalf("%d sessions of live traffic, want %d", len(s.Sessions), MaxKeptSessions)
		}
		starts := map[time.Time]bool{}
		late := func(i int) time.Time { return t0.Add(-time.Hour + time.Duration(i)*30*time.Second) }
		for i := range 10 {
			if reverse {
				i = 9 - i
			}
			starts[s.Place(late(i), now(), idle)] = true
		}
		want := late(0)
		if reverse {
			want = late(9)
		}
		if len(starts) != 1 || !starts[want] {
			t.Fatalf("reverse %v: 10 late items 30 s apart went into %d sessions %v, want 1 begun at %s", reverse, len(starts), starts, want)
		}
		// Live traffic goes on: two new sessions; the late session was
		// used more recently than the oldest live ones, so it stays and
		// the next late item joins it.
		live(&s, MaxKeptSessions+1, 2)
		if len(s.Sessions) != MaxKeptSessions || !s.Sessions[0].Start.Equal(want) {
			t.Fatalf("reverse %v: kept %d sessions, first %s; want %d with the late one", reverse, len(s.Sessions), s.Sessions[0].Start, MaxKeptSessions)
		}
		if got := s.Place(late(10), now(), idle); !got.Equal(want) {
			t.Errorf("reverse %v: a later late item began %s, want the late session %s", reverse, got, want)
		}
		// The same idle rule: a late item more than idle away from every
		// session begins its own.
		if far := t0.Add(-3 * time.Hour); !s.Place(far, now(), idle).Equal(far) {
			t.Errorf("reverse %v: an item 2 h before the late session joined one", reverse)
		}
	}
}
