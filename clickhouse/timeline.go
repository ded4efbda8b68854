package clickhouse

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// atExpr is an event's time in Unix milliseconds, as the rollups keep it.
const atExpr = "(toUInt64(ts) * 1000 + ts_ms)"

// timelineOrder orders a session's items: by time, then by every column
// that can tell two items apart, so that the order of the items of one
// millisecond is fixed and a cursor can skip a count of them. Items equal
// in all of these are interchangeable.
const timelineOrder = atExpr + `, ingest_node, ingest_seq, ` + EventID + `, method, name, is_error, error_type, error_message,
	has_duration, duration_ms, attr_keys, attr_values, client_name, client_version, user_id`

// SessionTimeline implements analytics.Reader. The session's first and
// last instants come from session_span (a primary-key lookup), so the
// events read are only those of the MCP between them, however old the
// session; the figures and the page are read from there concurrently.
func (db *Reads) SessionTimeline(ctx context.Context, mcpID, sessionID string, w analytics.TimeWindow, limit int, cursor string) (*analytics.SessionTimeline, error) {
	limit, err := analytics.TimelineLimit(limit)
	if err != nil {
		return nil, err
	}
	after, err := analytics.ParseTimelineCursor(cursor)
	if err != nil {
		return nil, err
	}
	notFound := telemetry.Errorf(telemetry.ENOTFOUND, "This MCP has no item of session %q in the window asked for.", sessionID)
	lo, hi, found, err := db.sessionBounds(ctx, mcpID, sessionID, w) // [lo, hi) in Unix ms
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound
	}
	where := func(lo uint64) (string, []any) {
		return fmt.Sprintf(`mcp_id = ? AND ts >= %s AND ts <= %s AND session_id = ? AND %s >= ? AND %s < ?`,
			timeLit(msTime(lo)), timeLit(msTime(hi-1)), atExpr, atExpr), []any{mcpID, sessionID, lo, hi}
	}

	var (
		head                          []timelineHead
		page                          []timelineRow
		pageLo                        = lo
		skip                          int
		clientName, clientVer, userID string
		before                        []string // keys of the calls before the page, newest first
	)
	if after != nil {
		pageLo = max(lo, uint64(after.At.UnixMilli()))
		if pageLo == uint64(after.At.UnixMilli()) {
			skip = after.Skip
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		cond, args := where(lo)
		q := fmt.Sprintf(`SELECT count(), sum(is_error), min(%[1]s), max(%[1]s),
				argMinIf(CAST(client_name AS String), %[1]s, client_name != ''),
				argMinIf(CAST(client_version AS String), %[1]s, client_name != ''),
				argMinIf(user_id, %[1]s, user_id != '')
			FROM %[2]s.events WHERE %[3]s`, atExpr, db.db, cond)
		return db.query(gctx, "session timeline", q, args, func() []any {
			h := appendRow(&head)
			return []any{&h.calls, &h.errors, &h.started, &h.last, &clientName, &clientVer, &userID}
		})
	})
	g.Go(func() error {
		cond, args := where(pageLo)
		// The skipped items too (they precede the page in its first
		// millisecond): their keys number the page's repeats.
		q := fmt.Sprintf(`SELECT %s, %s, method, name, is_error, error_type, error_message, has_duration, duration_ms, attr_keys, attr_values,
				CAST(error_kind AS String), response_bytes, args_hash
			FROM %s.events WHERE %s ORDER BY %s LIMIT %d`, atExpr, EventID, db.db, cond, timelineOrder, skip+limit+1)
		return db.query(gctx, "session timeline items", q, args, func() []any {
			r := appendRow(&page)
			return []any{&r.at, &r.id, &r.method, &r.name, &r.isErr, &r.errType, &r.errMsg, &r.hasDur, &r.dur, &r.keys, &r.values,
				&r.errKind, &r.respBytes, &r.argsHash}
		})
	})
	if pageLo > lo {
		cond, args := where(lo)
		g.Go(func() error { return db.callsBefore(gctx, cond, args, pageLo, &before) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if len(head) == 0 || head[0].calls == 0 {
		return nil, notFound
	}
	t := &analytics.SessionTimeline{
		SessionID: sessionID, StartedAt: msTime(head[0].started), LastSeenAt: msTime(head[0].last),
		Calls: int64(head[0].calls), Errors: int64(head[0].errors),
		ClientName: nonEmpty(clientName), ClientVersion: nonEmpty(clientVer), UserID: nonEmpty(userID),
	}
	t.Items, t.NextCursor = timelineItems(before, page, pageLo, skip, limit)
	return t, nil
}

// timelineItems turns the rows read (the skipped ones first) into the
// page's items with their repeat numbers, and the next page's cursor (nil
// on the last page).
func timelineItems(before []string, page []timelineRow, pageLo uint64, skip, limit int) ([]analytics.TimelineItem, *string) {
	repeats := pageRepeats(before, page)
	skip = min(skip, len(page))
	page, repeats = page[skip:], repeats[skip:]
	items := make([]analytics.TimelineItem, 0, min(len(page), limit))
	for i, r := range page {
		if i == limit {
			next := timelineNext(page[:limit], pageLo, skip)
			return items, &next
		}
		it := r.item()
		it.Repeat = repeats[i]
		items = append(items, it)
	}
	return items, nil
}

// callsBefore reads the repeat keys of the tools/call events that cond
// selects before pageLo (Unix ms), newest first, at most maxRepeatLookback.
func (db *Reads) callsBefore(ctx context.Context, cond string, args []any, pageLo uint64, keys *[]string) error {
	q := fmt.Sprintf(`SELECT %s FROM %s.events WHERE %s AND method = 'tools/call' AND %s < ?
		ORDER BY %s LIMIT %d`, repeatKeyExpr, db.db, cond, atExpr, descending(timelineOrder), maxRepeatLookback)
	return db.query(ctx, "session timeline repeats", q, append(args, pageLo), func() []any { return []any{appendRow(keys)} })
}

// maxRepeatLookback bounds how many calls before a page its first repeat
// number looks back at: a run longer than that is numbered from there.
const maxRepeatLookback = 1000

// pageRepeats numbers the repeats (analytics.RepeatOf) of the page's
// tools/call items, given the keys of the calls before it, newest first;
// other items get 0.
func pageRepeats(before []string, page []timelineRow) []int {
	prevKey, prev := "", 0
	if len(before) > 0 && before[0] != "" {
		prevKey = before[0]
		for prev+1 < len(before) && before[prev+1] == prevKey {
			prev++
		}
	}
	var keys []string
	var at []int
	for i, r := range page {
		if r.method == analytics.MethodToolsCall {
			keys = append(keys, analytics.RepeatKey(r.name, r.argsHash))
			at = append(at, i)
		}
	}
	out := make([]int, len(page))
	for j, n := range analytics.RepeatOf(prevKey, prev, keys) {
		out[at[j]] = n
	}
	return out
}

// descending turns an ORDER BY list into its reverse.
func descending(order string) string {
	parts := splitTopLevel(order) // EventID's commas are inside parentheses
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p) + " DESC"
	}
	return strings.Join(parts, ", ")
}

// sessionBounds is the span [lo, hi) in Unix ms of the session's items
// within w; found is false when the session has none there.
func (db *Reads) sessionBounds(ctx context.Context, mcpID, sessionID string, w analytics.TimeWindow) (lo, hi uint64, found bool, err error) {
	var spans [][2]uint64
	q := fmt.Sprintf(`SELECT minMerge(started), maxMerge(last_seen) FROM %s.session_span
		WHERE mcp_id = ? AND session_id = ? GROUP BY mcp_id`, db.db)
	if err := db.query(ctx, "session span", q, []any{mcpID, sessionID}, func() []any {
		s := appendRow(&spans)
		return []any{&s[0], &s[1]}
	}); err != nil {
		return 0, 0, false, err
	}
	if len(spans) == 0 {
		return 0, 0, false, nil
	}
	lo, hi = spans[0][0], spans[0][1]+1
	if !w.From.IsZero() {
		lo = max(lo, uint64(max(w.From.UnixMilli(), 0)))
	}
	if !w.End.IsZero() {
		hi = min(hi, uint64(max(w.End.UnixMilli(), 0)))
	}
	return lo, hi, lo < hi, nil
}

// timelineNext is the cursor of the page after page, which began at
// pageLo after skipping skip items. The next page starts after the last
// item returned: count the items of its millisecond that this page (and,
// when the page began in that millisecond, the skipped ones) returned.
func timelineNext(page []timelineRow, pageLo uint64, skip int) string {
	last := page[len(page)-1].at
	n := 0
	for _, p := range page {
		if p.at == last {
			n++
		}
	}
	if last == pageLo {
		n += skip
	}
	return analytics.TimelineCursor{At: msTime(last), Skip: n}.Encode()
}

type timelineHead struct {
	calls, errors, started, last uint64
}

type timelineRow struct {
	at               uint64
	id, method, name string
	isErr, hasDur    uint8
	errType, errMsg  string
	dur              float64
	keys, values     []string
	errKind          string
	respBytes        int64
	argsHash         string
}

func (r timelineRow) item() analytics.TimelineItem {
	it := analytics.TimelineItem{
		ID: nonEmpty(r.id), Timestamp: msTime(r.at), Method: r.method, Name: nonEmpty(r.name),
		Status: analytics.StatusOK, ErrorType: nonEmpty(r.errType), ErrorMessage: nonEmpty(r.errMsg),
		Attributes: make(map[string]string, len(r.keys)),
	}
	if r.isErr == 1 {
		it.Status = analytics.StatusError
	}
	if r.hasDur == 1 {
		d := r.dur
		it.DurationMs = &d
	}
	it.ErrorKind = nonEmpty(r.errKind)
	if r.respBytes >= 0 {
		b := r.respBytes
		it.ResponseBytes = &b
	}
	for i, k := range r.keys {
		if i < len(r.values) {
			it.Attributes[k] = r.values[i]
		}
	}
	return it
}
