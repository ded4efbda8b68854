package postgres

import (
	"container/list"
	"sync"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// SessionMirrorEntries bounds an instance's mirror of derived-session
// state (docs/sessions.md): the identities it placed or read most
// recently, each at most analytics.MaxKeptSessions sessions (about 1 KiB
// at most, a few hundred bytes usually), so a few tens of MiB whatever
// the traffic.
const SessionMirrorEntries = 32768

// sessionMirror is an instance's copy of the auto_sessions rows it placed
// or read last, least recently used first out. While PostgreSQL is
// unreachable, items are placed against it and their identities marked
// dirty; the next placement of a dirty identity in PostgreSQL merges it
// back (analytics.SessionState.Merge).
type sessionMirror struct {
	mu      sync.Mutex
	max     int
	lru     *list.List // of *mirrorEntry, most recently used in front
	byKey   map[mirrorKey]*list.Element
	dirty   int    // entries with placements PostgreSQL has not seen
	version uint64 // of the latest local placement
	evicted int    // dirty entries dropped for room, for the log
}

// mirrorKey is an MCP and an identity's hash (as auto_sessions keeps it);
// the empty identity holds the MCP's idle timeout.
type mirrorKey struct{ mcpID, identity string }

type mirrorEntry struct {
	key   mirrorKey
	state analytics.SessionState
	idle  time.Duration // the MCP's entry only
	// dirty is 0 when PostgreSQL has every placement of the entry, else
	// the version of its latest local placement.
	dirty uint64
}

func newSessionMirror(max int) *sessionMirror {
	return &sessionMirror{max: max, lru: list.New(), byKey: map[mirrorKey]*list.Element{}}
}

// entry returns the entry of k, created if missing, as the most recently
// used; the caller holds mu.
func (m *sessionMirror) entry(k mirrorKey) *mirrorEntry {
	if el, ok := m.byKey[k]; ok {
		m.lru.MoveToFront(el)
		return el.Value.(*mirrorEntry)
	}
	e := &mirrorEntry{key: k}
	m.byKey[k] = m.lru.PushFront(e)
	for m.lru.Len() > m.max {
		old := m.lru.Remove(m.lru.Back()).(*mirrorEntry)
		delete(m.byKey, old.key)
		if old.dirty != 0 {
			m.dirty--
			m.evicted++
		}
	}
	return e
}

// idle returns the MCP's idle timeout last read from PostgreSQL, or the
// default.
func (m *sessionMirror) idle(mcpID string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[mirrorKey{mcpID: mcpID}]; ok && el.Value.(*mirrorEntry).idle > 0 {
		return el.Value.(*mirrorEntry).idle
	}
	return analytics.DefaultSessionIdle
}

// dirtyState returns a copy of the local state of k and its version when
// it has placements PostgreSQL has not seen; version 0 otherwise.
func (m *sessionMirror) dirtyState(k mirrorKey) (analytics.SessionState, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[k]
	if !ok || el.Value.(*mirrorEntry).dirty == 0 {
		return analytics.SessionState{}, 0
	}
	e := el.Value.(*mirrorEntry)
	return e.state.Clone(), e.dirty
}

// stored records what PostgreSQL committed for the identities of keys
// (states in the same order) and the MCP's idle timeout; versions are
// what dirtyState returned before the transaction: an entry whose local
// placements all went into it is clean again.
func (m *sessionMirror) stored(mcpID string, idle time.Duration, keys []mirrorKey, states []analytics.SessionState, versions []uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entry(mirrorKey{mcpID: mcpID}).idle = idle
	for i, k := range keys {
		e := m.entry(k)
		// A union: commits of concurrent payloads may end in any order.
		e.state.Merge(states[i])
		if e.dirty != 0 && e.dirty == versions[i] {
			e.dirty = 0
			m.dirty--
		}
	}
}

// place runs fn on the local state of k, which PostgreSQL does not see
// (the entry is dirty until written back).
func (m *sessionMirror) place(k mirrorKey, fn func(*analytics.SessionState)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(k)
	fn(&e.state)
	if e.dirty == 0 {
		m.dirty++
	}
	m.version++
	e.dirty = m.version
}

// forget drops the entries of an MCP that no longer exists.
func (m *sessionMirror) forget(keys []mirrorKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if el, ok := m.byKey[k]; ok {
			if el.Value.(*mirrorEntry).dirty != 0 {
				m.dirty--
			}
			m.lru.Remove(el)
			delete(m.byKey, k)
		}
	}
}

// dirtyKeys returns up to limit dirty entries' keys, by MCP, and how many
// dirty entries were dropped for room since the last call.
func (m *sessionMirror) dirtyKeys(limit int) (map[string][]string, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	n := 0
	for el := m.lru.Front(); el != nil && n < limit && n < m.dirty; el = el.Next() {
		if e := el.Value.(*mirrorEntry); e.dirty != 0 {
			out[e.key.mcpID] = append(out[e.key.mcpID], e.key.identity)
			n++
		}
	}
	evicted := m.evicted
	m.evicted = 0
	return out, evicted
}

func (m *sessionMirror) dirtyCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dirty
}
