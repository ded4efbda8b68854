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
