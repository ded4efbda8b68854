package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// cutProxy forwards TCP connections to a real PostgreSQL until cut: then
// it refuses them (a server that is gone) or, hung, accepts and forwards
// nothing (a server that does not answer).
type cutProxy struct {
	t      *testing.T
	target string
	ln     net.Listener
	mu     sync.Mutex
	mode   string // "up", "down", "hung"
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target, mode: "up", conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	go p.serve(ln)
	t.Cleanup(func() { p.set("down") })
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		mode := p.mode
		p.mu.Unlock()
		if mode != "up" {
			continue // hung: held open, nothing forwarded
		}
		go func() {
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns[s] = true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			_, _ = io.Copy(c, s)
			c.Close()
		}()
	}
}

// openViaProxy opens a pool on the package's database through a cutProxy
// (not migrated: migrate through testDB first).
func openViaProxy(t *testing.T) (*DB, *cutProxy) {
	u, err := url.Parse(pg.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	db, err := Open(context.Background(), Config{URL: u.String(), MaxConns: 4}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, proxy
}

// set cuts every connection and switches the mode; "down" also stops
// listening (connections are refused), "up" listens again on the port.
func (p *cutProxy) set(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
	if p.mode == "down" && mode != "down" {
		ln, err := net.Listen("tcp", p.ln.Addr().String())
		if err != nil {
			p.t.Fatal(err)
		}
		p.ln = ln
		go p.serve(ln)
	} else if mode == "down" && p.mode != "down" {
		p.ln.Close()
	}
	p.mode = mode
}

func identityHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// storedStarts reads an identity's session starts from auto_sessions.
func storedStarts(t *testing.T, db *DB, mcpID, identity string) []time.Time {
	t.Helper()
	var starts []time.Time
	err := db.Pool.QueryRow(context.Background(), `SELECT starts FROM auto_sessions WHERE mcp_id = $1 AND identity = $2`,
		mcpID, identityHash(identity)).Scan(&starts)
	if err != nil {
		t.Fatalf("auto_sessions of %s: %v", identity, err)
	}
	return starts
}

// With PostgreSQL unreachable (refused, then hung), items sent without a
// session_id are placed from the instance's mirror, fast, with the ids the
// rule gives; once PostgreSQL answers, the mirror is merged back: a session
// that spans the outage goes on as one, an identity seen only during the
// outage is written back without a further item, and a session another
// instance began meanwhile is kept beside the mirror's (a union).
func TestAutoSessionsOutage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, accounts.AuthPolicy{})
	ctx := context.Background()
	s := f.signup(t, "autosess")
	m, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	viaProxy, proxy := openViaProxy(t)
	a := NewAutoSessions(viaProxy) // the instance that loses PostgreSQL
	other := NewAutoSessions(f.db) // another instance, which does not
	t0 := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Minute)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	assign := func(as *AutoSessions, user string, mins ...int) []string {
		t.Helper()
		items := make([]analytics.Item, len(mins))
		for i, n := range mins {
			items[i] = analytics.Item{ID: "x", Timestamp: at(n), UserID: user}
		}
		begun := time.Now()
		if err := as.AssignSessions(ctx, m.ID, items); err != nil {
			t.Fatalf("assign %s %v: %v", user, mins, err)
		}
		if d := time.Since(begun); d > as.timeout+time.Second {
			t.Errorf("assign %s %v took %s", user, mins, d)
		}
		ids := make([]string, len(items))
		for i := range items {
			ids[i] = items[i].SessionID
		}
		return ids
	}
	want := func(got []string, user string, start int) {
		t.Helper()
		id := analytics.AutoSessionID(m.ID, "u:"+user, at(start))
		for _, g := range got {
			if g != id {
				t.Errorf("%s: session %s, want the one begun at +%dm (%s)", user, g, start, id)
			}
		}
	}

	want(assign(a, "u-1", 0, 10), "u-1", 0)
	proxy.set("down")
	want(assign(a, "u-1", 20, 30), "u-1", 0) // from the mirror: within 30 minutes of +10m
	want(assign(a, "u-2", 25), "u-2", 25)    // an identity new to both
	want(assign(a, "u-3", 20), "u-3", 20)
	// The other instance, which reaches PostgreSQL, takes u-3 at +40m: it
	// does not know +20m, and begins a session (the split the outage
	// allows between instances).
	want(assign(other, "u-3", 40), "u-3", 40)
	// Hung: the placement gives up after its timeout.
	a.timeout, a.pause = 300*time.Millisecond, time.Hour
	proxy.set("hung")
	want(assign(a, "u-1", 35), "u-1", 0)
	// For a pause after that, payloads go to the mirror without waiting.
	begun := time.Now()
	want(assign(a, "u-1", 36), "u-1", 0)
	if d := time.Since(begun); d >= a.timeout {
		t.Errorf("a placement in the pause took %s", d)
	}
	if n := a.mirror.dirtyCount(); n != 3 {
		t.Errorf("%d identities dirty, want 3", n)
	}

	proxy.set("up")
	a.timeout = fallbackTimeout
	a.db.retryAt.Store(0) // the pause is over
	// +55m is 25 minutes after the outage's last item, 45 after the last
	// PostgreSQL had: merged first, so the session goes on.
	want(assign(a, "u-1", 55), "u-1", 0)
	// u-2 and u-3 had no item since: the write-back the placement started
	// brings them to PostgreSQL.
	deadline := time.Now().Add(10 * time.Second)
	for a.mirror.dirtyCount() > 0 || a.writing.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d identities still dirty", a.mirror.dirtyCount())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		user   string
		starts []int
	}{{"u-1", []int{0}}, {"u-2", []int{25}}, {"u-3", []int{20, 40}}} {
		got := storedStarts(t, f.db, m.ID, "u:"+c.user)
		ok := len(got) == len(c.starts)
		for i := range got {
			ok = ok && got[i].Equal(at(c.starts[i]))
		}
		if !ok {
			t.Errorf("%s: stored starts %v, want +%v minutes", c.user, got, c.starts)
		}
	}
	// Both instances now place u-3's late +5m in its first session, and
	// +45m in the other instance's.
	want(assign(other, "u-3", 5), "u-3", 20)
	want(assign(a, "u-3", 45), "u-3", 40)
}

// The mirror stays within its entry cap whatever the traffic; a dirty
// entry dropped for room is counted, and write-back no longer sees it.
func TestSessionMirrorBounded(t *testing.T) {
	t.Parallel()
	m := newSessionMirror(4)
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := range 10 {
		m.place(mirrorKey{"mcp", string(rune('a' + i))}, func(st *analytics.SessionState) { st.Place(t0, t0, time.Minute) })
	}
	if m.lru.Len() != 4 || len(m.byKey) != 4 || m.dirtyCount() != 4 {
		t.Fatalf("entries %d/%d, dirty %d; want 4", m.lru.Len(), len(m.byKey), m.dirtyCount())
	}
	keys, evicted := m.dirtyKeys(100)
	if evicted != 6 || len(keys["mcp"]) != 4 || keys["mcp"][0] != "j" {
		t.Errorf("dirty %v, evicted %d", keys, evicted)
	}
	// Stored with the version it was read at: clean; a placement after
	// the read keeps it dirty.
	st, v := m.dirtyState(mirrorKey{"mcp", "j"})
	_, v2 := m.dirtyState(mirrorKey{"mcp", "i"})
	m.place(mirrorKey{"mcp", "i"}, func(st *analytics.SessionState) { st.Place(t0.Add(time.Hour), t0, time.Minute) })
	m.stored("mcp", time.Minute, []mirrorKey{{"mcp", "j"}, {"mcp", "i"}}, []analytics.SessionState{st, {}}, []uint64{v, v2})
	// The MCP's own entry took g's room: j clean, i and h dirty.
	if m.dirtyCount() != 2 || m.idle("mcp") != time.Minute || m.idle("other") != analytics.DefaultSessionIdle {
		t.Errorf("dirty %d, idle %s", m.dirtyCount(), m.idle("mcp"))
	}
	if len(m.byKey) != 4 {
		t.Errorf("%d entries with the MCP's", len(m.byKey))
	}
}
