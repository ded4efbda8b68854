package analytics

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Sessions for items that carry no session_id (stateless servers, the MCP
// 2026-07-28 revision, which has no protocol sessions). The rule is
// docs/sessions.md's: the items of one MCP and one identity (the user id,
// else the client name and version) belong to one session until a gap
// longer than the MCP's idle timeout; the session's id is derived from
// the MCP, the identity and the instant the session began, so every
// instance and every replay gives the same id. A session_id sent with an
// item always wins.

// Idle timeout bounds: the default, and what an MCP may set.
const (
	DefaultSessionIdle = 30 * time.Minute
	MinSessionIdle     = time.Minute
	MaxSessionIdle     = 24 * time.Hour
)

// AutoSessionPrefix starts every derived session id.
const AutoSessionPrefix = "auto-"

// SessionIdentity is who a session-less item's session belongs to within
// its MCP: "u:" + the user id, else "c:" + client name and version (both
// empty for a client that sent neither: the MCP's anonymous traffic is then
// one identity).
func SessionIdentity(it *Item) string {
	if it.UserID != "" {
		return "u:" + it.UserID
	}
	return "c:" + strconv.Quote(it.ClientName) + " " + strconv.Quote(it.ClientVersion)
}

// MaxKeptSessions is how many of an identity's sessions are kept to place
// late items in: the most recently used ones.
const MaxKeptSessions = 16

// SessionStateTTL is how long an identity's state is of use after its last
// placement when the retention keeps data longer (or forever): items up to
// MaxItemAge old are accepted, and one joins a session at most
// MaxSessionIdle after its latest item, so past that no item can join any
// of its sessions. Identities idle longer than the retention, or than this,
// are expired (docs/sessions.md).
const SessionStateTTL = MaxItemAge + MaxSessionIdle

// SessionSpan is one derived session: its first and latest item, and when
// an item was last placed in it (the clock of the instance placing it),
// which decides which sessions are kept.
type SessionSpan struct {
	Start, LastSeen time.Time
	Used            time.Time
}

// SessionState is what is kept per MCP and identity: its sessions by
// start, oldest first, at most MaxKeptSessions, the least recently used
// dropped first. The zero state has seen nothing.
type SessionState struct {
	Sessions []SessionSpan
}

// Place returns the start of the session an item at ts belongs to, placing
// it at now, and records the item in the state. Times are taken to the
// microsecond (as PostgreSQL keeps them). The item joins the latest kept
// session it falls within the idle timeout of (from idle before its start
// to idle after its latest item), extending it; otherwise it begins a new
// session. Items arriving in time order thus split exactly at gaps longer
// than idle; a late item joins the session around it, whose start, hence
// id, never moves. Late items older than every kept session group by the
// same rule: the session the first of them begins is the most recently
// used, so it is kept, and the next ones join it.
func (s *SessionState) Place(ts, now time.Time, idle time.Duration) time.Time {
	ts, now = ts.UTC().Truncate(time.Microsecond), now.UTC().Truncate(time.Microsecond)
	for i := len(s.Sessions) - 1; i >= 0; i-- {
		c := &s.Sessions[i]
		if !ts.Before(c.Start.Add(-idle)) && !ts.After(c.LastSeen.Add(idle)) {
			if ts.After(c.LastSeen) {
				c.LastSeen = ts
			}
			if now.After(c.Used) {
				c.Used = now
			}
			return c.Start
		}
	}
	at := sort.Search(len(s.Sessions), func(i int) bool { return s.Sessions[i].Start.After(ts) })
	s.Sessions = slices.Insert(s.Sessions, at, SessionSpan{Start: ts, LastSeen: ts, Used: now})
	s.trim(ts)
	return ts
}

// trim drops the least recently used sessions (of equally used ones, the
// oldest) beyond MaxKeptSessions, never the one begun at keep.
func (s *SessionState) trim(keep time.Time) {
	for len(s.Sessions) > MaxKeptSessions {
		drop := -1
		for i, c := range s.Sessions {
			if c.Start.Equal(keep) {
				continue
			}
			if drop < 0 || c.Used.Before(s.Sessions[drop].Used) {
				drop = i
			}
		}
		s.Sessions = slices.Delete(s.Sessions, drop, drop+1)
	}
}

// Merge adds other's sessions to s, as when two copies of one identity's
// state were placed apart (an instance's local copy while PostgreSQL was
// unreachable, docs/sessions.md): the union of both, a session present in
// both (the same start) keeping its latest item and latest use; a
// session's start never moves. At most the MaxKeptSessions most recently
// used sessions stay.
func (s *SessionState) Merge(other SessionState) {
	for _, o := range other.Sessions {
		o.Start, o.LastSeen = o.Start.UTC().Truncate(time.Microsecond), o.LastSeen.UTC().Truncate(time.Microsecond)
		o.Used = o.Used.UTC().Truncate(time.Microsecond)
		at := sort.Search(len(s.Sessions), func(i int) bool { return !s.Sessions[i].Start.Before(o.Start) })
		if at < len(s.Sessions) && s.Sessions[at].Start.Equal(o.Start) {
			c := &s.Sessions[at]
			if o.LastSeen.After(c.LastSeen) {
				c.LastSeen = o.LastSeen
			}
			if o.Used.After(c.Used) {
				c.Used = o.Used
			}
			continue
		}
		s.Sessions = slices.Insert(s.Sessions, at, o)
	}
	s.trim(time.Time{})
}

// Clone returns a copy of s that shares nothing with it.
func (s SessionState) Clone() SessionState {
	return SessionState{Sessions: append([]SessionSpan(nil), s.Sessions...)}
}

// AutoSessionID is the id of the derived session of an identity of an MCP
// that began at start: "auto-" and 24 hex characters of a SHA-256.
func AutoSessionID(mcpID, identity string, start time.Time) string {
	h := sha256.New()
	h.Write([]byte(mcpID))
	h.Write([]byte{0})
	h.Write([]byte(identity))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(start.UTC().Truncate(time.Microsecond).UnixMicro(), 10)))
	return AutoSessionPrefix + hex.EncodeToString(h.Sum(nil))[:24]
}
