package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

var _ analytics.SessionAssigner = (*AutoSessions)(nil)

// AutoSessions gives items sent without a session_id their derived
// session (analytics.SessionState, docs/sessions.md), from the per-(MCP,
// identity) state in auto_sessions, shared by every instance: the rows of
// a payload's identities are locked for its transaction, so two instances
// taking the same identity's items at once place them one after the other.
// While PostgreSQL is unreachable it places them against its mirror of the
// state it placed or read last, and writes that back once PostgreSQL
// answers again.
type AutoSessions struct {
	db      *DB
	mirror  *sessionMirror
	timeout time.Duration // of one placement in PostgreSQL
	pause   time.Duration // after a failed one, PostgreSQL is not asked

	outage  atomic.Bool // placing from the mirror: logged once
	writing atomic.Bool // a write-back runs
}

// writeBackBatch is how many identities one write-back transaction takes.
const writeBackBatch = 256

// NewAutoSessions returns the assigner over db.
func NewAutoSessions(db *DB) *AutoSessions {
	return &AutoSessions{db: db, mirror: newSessionMirror(SessionMirrorEntries), timeout: fallbackTimeout, pause: fallbackPause}
}

// AssignSessions implements analytics.SessionAssigner. It fails only on an
// error other than PostgreSQL being unreachable.
func (a *AutoSessions) AssignSessions(ctx context.Context, mcpID string, items []analytics.Item) error {
	byIdentity := map[string][]int{} // by the identity's hash, as stored
	identity := map[string]string{}
	for i := range items {
		if items[i].SessionID == "" {
			id := analytics.SessionIdentity(&items[i])
			h := storedIdentity(id)
			byIdentity[h] = append(byIdentity[h], i)
			identity[h] = id
		}
	}
	if len(byIdentity) == 0 {
		return nil
	}
	identities := make([]string, 0, len(byIdentity))
	for id := range byIdentity {
		identities = append(identities, id)
	}
	sort.Strings(identities) // one lock order: no deadlock between payloads
	err := a.db.tryOrFallBack(ctx, a.timeout, a.pause, func(ctx context.Context) error {
		return a.placeShared(ctx, mcpID, identities, byIdentity, identity, items)
	})
	if err == nil {
		if a.outage.CompareAndSwap(true, false) {
			a.db.log.Info("sessions: PostgreSQL answers again; placing in it, the mirror's placements are written back")
		}
		if a.mirror.dirtyCount() > 0 && a.writing.CompareAndSwap(false, true) {
			go a.writeBack()
		}
		return nil
	}
	if telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE {
		return err
	}
	if a.outage.CompareAndSwap(false, true) {
		a.db.log.Warn("sessions: PostgreSQL is unreachable; placing items sent without a session_id from this instance's mirror (docs/sessions.md)",
			"error", err)
	}
	idle := a.mirror.idle(mcpID)
	for _, h := range identities {
		idx := byIdentity[h]
		for _, i := range idx {
			items[i].SessionID = "" // the failed transaction may have placed some
		}
		a.mirror.place(mirrorKey{mcpID, h}, func(st *analytics.SessionState) {
			place(items, idx, mcpID, identity[h], st, time.Now(), idle)
		})
	}
	return nil
}

// placeShared places the items at byIdentity (none: a write-back) in one
// transaction over the identities' rows, merging into each the mirror's
// placements PostgreSQL has not seen yet; once it commits, the mirror
// holds what it stored.
func (a *AutoSessions) placeShared(ctx context.Context, mcpID string, identities []string, byIdentity map[string][]int, identity map[string]string, items []analytics.Item) error {
	keys := make([]mirrorKey, len(identities))
	for n, h := range identities {
		keys[n] = mirrorKey{mcpID, h}
	}
	var (
		idle     = analytics.DefaultSessionIdle
		exists   = true
		states   = make([]analytics.SessionState, len(identities))
		versions = make([]uint64, len(identities))
	)
	err := wrap(pgx.BeginFunc(ctx, a.db.Pool, func(tx pgx.Tx) error {
		// The state only steers where later items go; a commit lost to a
		// PostgreSQL crash at worst splits a session there, so the commit
		// does not wait for the disk (it did: about 5 ms a payload).
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		var minutes int
		switch err := tx.QueryRow(ctx, `SELECT session_idle_minutes FROM mcps WHERE id = $1`, mcpID).Scan(&minutes); err {
		case nil:
			idle = time.Duration(minutes) * time.Minute
		case pgx.ErrNoRows:
			// A payload of an MCP deleted meanwhile (its keys stop within
			// seconds): placed with the default and nothing kept.
			exists = false
			for h, idx := range byIdentity {
				var st analytics.SessionState
				place(items, idx, mcpID, identity[h], &st, time.Now(), idle)
			}
			return nil
		default:
			return err
		}
		stored, err := lockSessions(ctx, tx, mcpID, identities)
		if err != nil {
			return err
		}
		// One UPDATE for every identity: each one's sessions as three array
		// literals (text), cast back to timestamptz[] by the statement.
		now := time.Now()
		starts, lasts, used := make([]string, len(identities)), make([]string, len(identities)), make([]string, len(identities))
		for n, id := range identities {
			st := stored[id]
			// Placed here while PostgreSQL was unreachable: the union, so
			// a session that spans the outage goes on as one.
			if local, v := a.mirror.dirtyState(keys[n]); v != 0 {
				st.Merge(local)
				versions[n] = v
			}
			place(items, byIdentity[id], mcpID, identity[id], &st, now, idle)
			states[n] = st
			starts[n] = timeArray(st.Sessions, func(c analytics.SessionSpan) time.Time { return c.Start })
			lasts[n] = timeArray(st.Sessions, func(c analytics.SessionSpan) time.Time { return c.LastSeen })
			used[n] = timeArray(st.Sessions, func(c analytics.SessionSpan) time.Time { return c.Used })
		}
		if _, err := tx.Exec(ctx, `UPDATE auto_sessions AS a
			SET starts = u.s::timestamptz[], lasts = u.l::timestamptz[], used = u.u::timestamptz[]
			FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS u(i, s, l, u)
			WHERE a.mcp_id = $1 AND a.identity = u.i`, mcpID, identities, starts, lasts, used); err != nil {
			return err
		}
		return nil
	}))
	switch {
	case err != nil:
	case !exists:
		a.mirror.forget(append(keys, mirrorKey{mcpID: mcpID}))
	default:
		a.mirror.stored(mcpID, idle, keys, states, versions)
	}
	return err
}

// lockSessions creates the rows of the identities that have none, locks
// them all (in identity order, as the caller sorted them), marks them used
// now (so that expiry, DB.ExpireSessions, leaves them) and returns their
// stored sessions. A row expired meanwhile is created again: the insert
// and the lock are one statement.
func lockSessions(ctx context.Context, tx pgx.Tx, mcpID string, identities []string) (map[string]analytics.SessionState, error) {
	rows, err := tx.Query(ctx, `INSERT INTO auto_sessions AS a (mcp_id, identity)
		SELECT $1, u FROM unnest($2::text[]) AS u ORDER BY u
		ON CONFLICT (mcp_id, identity) DO UPDATE SET used_at = now()
		RETURNING a.identity, a.starts, a.lasts, a.used`, mcpID, identities)
	if err != nil {
		return nil, err
	}
	stored := map[string]analytics.SessionState{}
	for rows.Next() {
		var id string
		var starts, lasts, used []time.Time
		if err := rows.Scan(&id, &starts, &lasts, &used); err != nil {
			rows.Close()
			return nil, err
		}
		var st analytics.SessionState
		for i := range min(len(starts), len(lasts)) {
			c := analytics.SessionSpan{Start: starts[i].UTC(), LastSeen: lasts[i].UTC(), Used: lasts[i].UTC()}
			if len(used) == len(starts) {
				c.Used = used[i].UTC()
			}
			st.Sessions = append(st.Sessions, c)
		}
		stored[id] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return stored, nil
}

// writeBack writes the mirror's placements PostgreSQL has not seen back
// to it, identities that had no item since the outage included, and stops
// at the first failure (the next placement that succeeds starts it again).
func (a *AutoSessions) writeBack() {
	defer a.writing.Store(false)
	byMCP, evicted := a.mirror.dirtyKeys(SessionMirrorEntries)
	if evicted > 0 {
		a.db.log.Warn("sessions: the mirror dropped placements made while PostgreSQL was unreachable, for room; "+
			"a session of those identities may be split where the outage began", "identities", evicted)
	}
	written := 0
	for mcpID, identities := range byMCP {
		sort.Strings(identities)
		for len(identities) > 0 {
			batch := identities[:min(len(identities), writeBackBatch)]
			identities = identities[len(batch):]
			ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
			err := a.placeShared(ctx, mcpID, batch, nil, nil, nil)
			cancel()
			if err != nil {
				a.db.log.Warn("sessions: writing the mirror back to PostgreSQL failed; it goes on with the next placement", "error", err)
				return
			}
			written += len(batch)
		}
	}
	a.db.log.Info("sessions: placements made while PostgreSQL was unreachable are written back", "identities", written)
}

// place gives the items at idx, all of one identity, their sessions in
// time order, placing them at now, recording them in st.
func place(items []analytics.Item, idx []int, mcpID, identity string, st *analytics.SessionState, now time.Time, idle time.Duration) {
	sort.SliceStable(idx, func(i, j int) bool { return items[idx[i]].Timestamp.Before(items[idx[j]].Timestamp) })
	for _, i := range idx {
		items[i].SessionID = analytics.AutoSessionID(mcpID, identity, st.Place(items[i].Timestamp, now, idle))
	}
}

// storedIdentity is an identity as auto_sessions keeps it: its SHA-256,
// so that no user id is kept there.
func storedIdentity(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:])
}

// timeArray renders one time of each session (its start, latest item or
// latest use) as a PostgreSQL array literal.
func timeArray(sessions []analytics.SessionSpan, at func(analytics.SessionSpan) time.Time) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range sessions {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(at(c).UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	}
	b.WriteByte('}')
	return b.String()
}

// expireBatch bounds the rows one statement of ExpireSessions deletes.
const expireBatch = 5000

// ExpireSessions deletes the derived-session state (auto_sessions) of the
// identities that had no item placed for longer than their account's
// retention (installationDays where the account sets none; 0: forever),
// or than analytics.SessionStateTTL when that is shorter: past it no
// accepted item can join any of their sessions. It deletes in batches of
// expireBatch rows and returns how many it deleted. An identity placed
// again meanwhile keeps its row (the placement marks it used, and the
// delete re-checks).
func (db *DB) ExpireSessions(ctx context.Context, installationDays int) (int64, error) {
	ttlDays := int(analytics.SessionStateTTL / (24 * time.Hour))
	var total int64
	for {
		// The least retention is a day: the first condition lets the
		// scan use auto_sessions_used_at.
		tag, err := db.Pool.Exec(ctx, `DELETE FROM auto_sessions AS s USING (
				SELECT mcp_id, identity, cutoff FROM (
					SELECT s.mcp_id, s.identity, s.used_at, now() - make_interval(days => LEAST($2::int, CASE
						WHEN a.retention_days IS NULL OR a.retention_days <= 0 THEN NULLIF($1::int, 0)
						WHEN $1::int > 0 AND a.retention_days > $1::int THEN $1::int
						ELSE a.retention_days END)) AS cutoff
					FROM auto_sessions s JOIN mcps m ON m.id = s.mcp_id JOIN accounts a ON a.id = m.account_id
					WHERE s.used_at < now() - interval '1 day') AS idle
				WHERE used_at < cutoff
				LIMIT $3) AS old
			WHERE s.mcp_id = old.mcp_id AND s.identity = old.identity AND s.used_at < old.cutoff`,
			installationDays, ttlDays, expireBatch)
		if err != nil {
			return total, wrap(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() == 0 {
			return total, nil
		}
	}
}
