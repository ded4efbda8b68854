package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// Sessions implements analytics.Reader from session_daily: the sessions
// with an item in the range, their figures merged over the range's days,
// newest first, keyset-paginated on (started_at, session_id) descending.
// The keyset makes a page independent of what arrived since the previous
// one: new sessions sort before the cursor (they are newer) and are not
// visited; known sessions keep their started_at (it is a minimum) and so
// their place.
//
// Merging every session of a long range for each page would cost seconds
// for a big MCP, so a page is looked for in a window of the newest days
// first: the sessions whose in-range items all fall in [x, to] are exactly
// those that started at or after x, so if enough of them are left after
// the cursor, they are the page; otherwise the window doubles towards
// from. Recent pages thus cost the recent days, and a walk through a whole
// long range costs about what one full merge did.
func (db *Reads) Sessions(ctx context.Context, mcpID string, r analytics.Range, limit int, cursor string) (*analytics.SessionPage, error) {
	limit, err := analytics.SessionLimit(limit)
	if err != nil {
		return nil, err
	}
	after, err := analytics.ParseSessionCursor(cursor)
	if err != nil {
		return nil, err
	}
	page := r
	// The windows read no day before the account keeps (the page echoes
	// the range asked for).
	r.From, r.KeptFrom = r.Lower(), time.Time{}
	// Sessions after the cursor started on its day or before.
	x := r.To.AddDate(0, 0, -1)
	if after != nil {
		if d := analytics.UTCDay(after.StartedAt).AddDate(0, 0, -1); d.Before(x) {
			x = d
		}
	}
	for {
		if x.Before(r.From) {
			x = r.From
		}
		items, err := db.sessionsStartedFrom(ctx, mcpID, r, x, limit+1, after)
		if err != nil {
			return nil, err
		}
		if len(items) > limit || !x.After(r.From) {
			return sessionPage(page, items, limit), nil
		}
		days := int(r.To.Sub(x)/(24*time.Hour)) + 1
		x = r.To.AddDate(0, 0, 1-2*days) // double the window [x, to]
	}
}

// sessionsStartedFrom returns the first n sessions after the cursor among
// those whose items in the range all lie in [x, to]. The sessions of the
// window that also had items in [from, x) are left out by an anti-join on
// the (few) ids of the window, which reads only the session_id column of
// the earlier days.
func (db *Reads) sessionsStartedFrom(ctx context.Context, mcpID string, r analytics.Range, x time.Time, n int, after *analytics.SessionCursor) ([]analytics.Session, error) {
	window := analytics.Range{From: x, To: r.To}
	args := []any{mcpID}
	startedBefore := ""
	if x.After(r.From) {
		earlier := analytics.Range{From: r.From, To: x.AddDate(0, 0, -1)}
		// The subqueries read the shard's own table (see the package doc).
		startedBefore = fmt.Sprintf(`AND session_id NOT IN (
				SELECT session_id FROM %[1]s WHERE mcp_id = ? AND %[2]s AND session_id IN (
					SELECT session_id FROM %[1]s WHERE mcp_id = ? AND %[3]s))`,
			db.local("session_daily"), dayFilter(earlier), dayFilter(window))
		args = append(args, mcpID, mcpID)
	}
	having := ""
	if after != nil {
		started := uint64(after.StartedAt.UnixMilli())
		having = "HAVING s < ? OR (s = ? AND session_id < ?)"
		args = append(args, started, started, after.SessionID)
	}
	q := fmt.Sprintf(`SELECT session_id, minMerge(started) AS s, maxMerge(last_seen), toInt64(countMerge(calls)), toInt64(sumMerge(errors)),
			argMinIfMerge(first_client_name), argMinIfMerge(first_client_version), argMinIfMerge(first_user_id)
		FROM %s.session_daily WHERE mcp_id = ? AND %s %s
		GROUP BY session_id %s
		ORDER BY s DESC, session_id DESC
		LIMIT %d`, db.db, dayFilter(window), startedBefore, having, n)
	type session struct {
		s                             analytics.Session
		started, last                 uint64
		clientName, clientVer, userID string
	}
	var rows []session
	err := db.query(ctx, "sessions", q, args, func() []any {
		r := appendRow(&rows)
		return []any{&r.s.SessionID, &r.started, &r.last, &r.s.Calls, &r.s.Errors, &r.clientName, &r.clientVer, &r.userID}
	})
	if err != nil {
		return nil, err
	}
	items := make([]analytics.Session, len(rows))
	for i, r := range rows {
		items[i] = r.s
		items[i].StartedAt, items[i].LastSeenAt = msTime(r.started), msTime(r.last)
		items[i].ClientName, items[i].ClientVersion, items[i].UserID = nonEmpty(r.clientName), nonEmpty(r.clientVer), nonEmpty(r.userID)
	}
	return items, nil
}

// sessionPage cuts items (up to limit+1) to a page; the extra item only
// says that there is a next page, which starts after the page's last.
func sessionPage(r analytics.Range, items []analytics.Session, limit int) *analytics.SessionPage {
	page := &analytics.SessionPage{From: r.FromDate(), To: r.ToDate(), Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		next := analytics.SessionCursor{StartedAt: last.StartedAt, SessionID: last.SessionID}.Encode()
		page.NextCursor = &next
	}
	return page
}

// nonEmpty returns nil for "", a pointer to s otherwise.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
