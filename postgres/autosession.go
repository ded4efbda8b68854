package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
)

var _ ingest.SessionAssigner = (*AutoSessions)(nil)

// AutoSessions gives items sent without a session_id their derived
// session (analytics.SessionState, docs/sessions.md), from the per-(MCP,
// identity) state in auto_sessions, shared by every instance: the rows of
// a payload's identities are locked for its transaction, so two instances
// taking the same identity's items at once place them one after the other.
type AutoSessions struct{ db *DB }

// NewAutoSessions returns the assigner over db.
func NewAutoSessions(db *DB) *AutoSessions { return &AutoSessions{db: db} }

// AssignSessions implements ingest.SessionAssigner.
func (a *AutoSessions) AssignSessions(ctx context.Context, mcpID string, items []analytics.Item) error {
	byIdentity := map[string][]int{} // by the identity's hash, as stored
	identity := map[string]string{}
	for i := range items {
		if items[i].SessionID == "" {
			id := analytics.SessionIdentity(&items[i])
			sum := sha256.Sum256([]byte(id))
			h := hex.EncodeToString(sum[:])
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
	return wrap(pgx.BeginFunc(ctx, a.db.Pool, func(tx pgx.Tx) error {
		// The state only steers where later items go; a commit lost to a
		// PostgreSQL crash at worst splits a session there, so the commit
		// does not wait for the disk (it did: about 5 ms a payload).
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		idle := analytics.DefaultSessionIdle
		var minutes int
		exists := true
		switch err := tx.QueryRow(ctx, `SELECT session_idle_minutes FROM mcps WHERE id = $1`, mcpID).Scan(&minutes); err {
		case nil:
			idle = time.Duration(minutes) * time.Minute
		case pgx.ErrNoRows:
			// A payload of an MCP deleted meanwhile (its keys stop within
			// seconds): placed with the default and nothing kept.
			exists = false
		default:
			return err
		}
		if !exists {
			for h, idx := range byIdentity {
				var st analytics.SessionState
				place(items, idx, mcpID, identity[h], &st, idle)
			}
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO auto_sessions (mcp_id, identity)
			SELECT $1, u FROM unnest($2::text[]) AS u ORDER BY u ON CONFLICT DO NOTHING`, mcpID, identities); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT identity, starts, lasts FROM auto_sessions
			WHERE mcp_id = $1 AND identity = ANY($2) ORDER BY identity FOR UPDATE`, mcpID, identities)
		if err != nil {
			return err
		}
		states := map[string]*analytics.SessionState{}
		for rows.Next() {
			var id string
			var starts, lasts []time.Time
			if err := rows.Scan(&id, &starts, &lasts); err != nil {
				rows.Close()
				return err
			}
			st := &analytics.SessionState{}
			for i := range min(len(starts), len(lasts)) {
				st.Sessions = append(st.Sessions, analytics.SessionSpan{Start: starts[i].UTC(), LastSeen: lasts[i].UTC()})
			}
			states[id] = st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// One UPDATE for every identity: each one's sessions as two array
		// literals (text), cast back to timestamptz[] by the statement.
		starts, lasts := make([]string, len(identities)), make([]string, len(identities))
		for n, id := range identities {
			st := states[id]
			if st == nil {
				st = &analytics.SessionState{}
			}
			place(items, byIdentity[id], mcpID, identity[id], st, idle)
			starts[n], lasts[n] = timeArray(st.Sessions, false), timeArray(st.Sessions, true)
		}
		if _, err := tx.Exec(ctx, `UPDATE auto_sessions AS a SET starts = u.s::timestamptz[], lasts = u.l::timestamptz[]
			FROM unnest($2::text[], $3::text[], $4::text[]) AS u(i, s, l)
			WHERE a.mcp_id = $1 AND a.identity = u.i`, mcpID, identities, starts, lasts); err != nil {
			return err
		}
		return nil
	}))
}

// place gives the items at idx, all of one identity, their sessions in
// time order, recording them in st.
func place(items []analytics.Item, idx []int, mcpID, identity string, st *analytics.SessionState, idle time.Duration) {
	sort.SliceStable(idx, func(i, j int) bool { return items[idx[i]].Timestamp.Before(items[idx[j]].Timestamp) })
	for _, i := range idx {
		items[i].SessionID = analytics.AutoSessionID(mcpID, identity, st.Place(items[i].Timestamp, idle))
	}
}

// timeArray renders the starts (or, with last, the latest items) of
// sessions as a PostgreSQL array literal.
func timeArray(sessions []analytics.SessionSpan, last bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range sessions {
		if i > 0 {
			b.WriteByte(',')
		}
		t := c.Start
		if last {
			t = c.LastSeen
		}
		b.WriteString(t.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	}
	b.WriteByte('}')
	return b.String()
}
