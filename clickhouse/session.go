package clickhouse

import (
	"context"
	"fmt"

	"github.com/mcpscope/telemetry/analytics"
)

// Sessions implements analytics.Reader from session_daily: the sessions
// with an item in the range, their figures merged over the range's days,
// newest first, keyset-paginated on (started_at, session_id) descending.
// The keyset makes a page independent of what arrived since the previous
// one: new sessions sort before the cursor (they are newer) and are not
// visited; known sessions keep their started_at (it is a minimum) and so
// their place. Each page merges the MCP's sessions of the range, which is
// cheap for the default week and grows with the range.
func (db *DB) Sessions(ctx context.Context, mcpID string, r analytics.Range, limit int, cursor string) (*analytics.SessionPage, error) {
	limit, err := analytics.SessionLimit(limit)
	if err != nil {
		return nil, err
	}
	after, err := analytics.ParseSessionCursor(cursor)
	if err != nil {
		return nil, err
	}
	args := []any{mcpID}
	having := ""
	if after != nil {
		started := uint64(after.StartedAt.UnixMilli())
		having = "HAVING s < ? OR (s = ? AND session_id < ?)"
		args = append(args, started, started, after.SessionID)
	}
	q := fmt.Sprintf(`SELECT session_id, minMerge(started) AS s, maxMerge(last_seen), countMerge(calls), sumMerge(errors),
			argMinIfMerge(first_client_name), argMinIfMerge(first_client_version), argMinIfMerge(first_user_id)
		FROM %s.session_daily WHERE mcp_id = ? AND %s
		GROUP BY session_id %s
		ORDER BY s DESC, session_id DESC
		LIMIT %d`, db.db, dayFilter(r), having, limit+1)
	rows, err := db.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("sessions", err)
	}
	defer rows.Close()
	page := &analytics.SessionPage{From: r.FromDate(), To: r.ToDate(), Items: make([]analytics.Session, 0, limit)}
	for rows.Next() {
		var (
			s                             analytics.Session
			started, last, calls, errs    uint64
			clientName, clientVer, userID string
		)
		if err := rows.Scan(&s.SessionID, &started, &last, &calls, &errs, &clientName, &clientVer, &userID); err != nil {
			return nil, wrapErr("sessions", err)
		}
		if len(page.Items) == limit {
			// The extra row only says that there is a next page.
			prev := page.Items[limit-1]
			next := analytics.SessionCursor{StartedAt: prev.StartedAt, SessionID: prev.SessionID}.Encode()
			page.NextCursor = &next
			break
		}
		s.StartedAt, s.LastSeenAt = msTime(started), msTime(last)
		s.Calls, s.Errors = int64(calls), int64(errs)
		s.ClientName, s.ClientVersion, s.UserID = nonEmpty(clientName), nonEmpty(clientVer), nonEmpty(userID)
		page.Items = append(page.Items, s)
	}
	return page, wrapErr("sessions", rows.Err())
}

// nonEmpty returns nil for "", a pointer to s otherwise.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
