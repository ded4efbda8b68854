package postgres

import (
	"context"
	"sort"
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
	byIdentity := map[string][]int{}
	for i := range items {
		if items[i].SessionID == "" {
			id := analytics.SessionIdentity(&items[i])
			byIdentity[id] = append(byIdentity[id], i)
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
		idle := analytics.DefaultSessionIdle
		var minutes int
		switch err := tx.QueryRow(ctx, `SELECT session_idle_minutes FROM mcps WHERE id = $1`, mcpID).Scan(&minutes); err {
		case nil:
			idle = time.Duration(minutes) * time.Minute
		case pgx.ErrNoRows: // a deleted MCP's last payload: the default
		default:
			return err
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
		for _, id := range identities {
			idx := byIdentity[id]
			sort.SliceStable(idx, func(i, j int) bool { return items[idx[i]].Timestamp.Before(items[idx[j]].Timestamp) })
			st := states[id]
			if st == nil {
				st = &analytics.SessionState{}
			}
			for _, i := range idx {
				items[i].SessionID = analytics.AutoSessionID(mcpID, id, st.Place(items[i].Timestamp, idle))
			}
			starts, lasts := make([]time.Time, len(st.Sessions)), make([]time.Time, len(st.Sessions))
			for i, c := range st.Sessions {
				starts[i], lasts[i] = c.Start, c.LastSeen
			}
			if _, err := tx.Exec(ctx, `UPDATE auto_sessions SET starts = $3, lasts = $4 WHERE mcp_id = $1 AND identity = $2`,
				mcpID, id, starts, lasts); err != nil {
				return err
			}
		}
		return nil
	}))
}
