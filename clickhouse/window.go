package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
)

// WindowStats implements analytics.WindowReader with one scan of events:
// rule windows are minutes to a day long, which the (mcp_id, ts) key and
// day partitions make a narrow read, while a rollup by day could not cut
// them. Each row counts for its MCP under "" and, for tools/call, again
// under its tool name (ARRAY JOIN), so one GROUP BY yields both. The window
// is [from, to) to the millisecond.
func (db *DB) WindowStats(ctx context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error) {
	out := make(map[string]map[string]analytics.WindowStat, len(mcpIDs))
	if len(mcpIDs) == 0 || !from.Before(to) {
		return out, nil
	}
	ids := make([]any, len(mcpIDs))
	for i, id := range mcpIDs {
		ids[i] = id
	}
	q := fmt.Sprintf(`SELECT mcp_id, key, toInt64(count()), toInt64(sum(is_error)), sum(has_duration),
			quantilesTDigestIf(0.5, 0.95, 0.99)(duration_ms, has_duration),
			toInt64(uniqExact(session_id)), toInt64(uniqExact(user_key))
		FROM %s.events
		ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
		WHERE mcp_id IN ? AND %s
		GROUP BY mcp_id, key`, db.db, msRange(from, to))
	type stat struct {
		mcpID, key string
		st         analytics.WindowStat
		withDur    uint64
		qs         []float32
	}
	var rows []stat
	err := db.query(ctx, "window stats", q, []any{clickhouse.GroupSet{Value: ids}}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.st.Calls, &r.st.Errors, &r.withDur, &r.qs, &r.st.Sessions, &r.st.Users}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.withDur > 0 {
			setQuantiles(&r.st, r.qs)
		}
		if out[r.mcpID] == nil {
			out[r.mcpID] = map[string]analytics.WindowStat{}
		}
		out[r.mcpID][r.key] = r.st
	}
	return out, nil
}

// msRange selects the events in [from, to) to the millisecond: a coarse
// range on ts, which the primary key and partitions use, refined on the
// boundary seconds with ts_ms.
func msRange(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	fromMs, toMs := from.Nanosecond()/1e6, to.Nanosecond()/1e6
	return fmt.Sprintf("ts >= %[1]s AND ts <= %[2]s AND (ts > %[1]s OR ts_ms >= %[3]d) AND (ts < %[2]s OR ts_ms < %[4]d)",
		timeLit(from), timeLit(to), fromMs, toMs)
}

var _ analytics.WindowSetReader = (*DB)(nil)

// WindowSets implements analytics.WindowSetReader with one scan of events
// for the counts of every window (per-minute buckets before to, summed in
// Go into each window) and, when some windows want a 95th percentile, one
// more that merges per-minute t-digest states into just those windows.
// Buckets are exact to the millisecond: an event belongs to a window of w
// minutes when to - w·60 s <= its time < to, as in WindowStats.
func (db *DB) WindowSets(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
	out := make(map[string]map[int]map[string]analytics.WindowStat, len(reqs))
	longest, ids, p95IDs := 0, make([]any, 0, len(reqs)), []string{}
	for id, r := range reqs {
		if len(r.Minutes) == 0 {
			continue
		}
		ids = append(ids, id)
		for _, m := range r.Minutes {
			longest = max(longest, m)
		}
		if len(r.DetailMinutes) > 0 {
			p95IDs = append(p95IDs, id)
		}
	}
	if len(ids) == 0 || longest <= 0 {
		return out, nil
	}
	toMs := to.UnixMilli()
	// bucket is how many whole minutes before to an event lies: 0 for
	// (to - 60 s, to), so a window of w minutes holds buckets 0..w-1.
	bucket := fmt.Sprintf("intDiv(%d - (toInt64(ts) * 1000 + ts_ms) - 1, 60000)", toMs)
	where := fmt.Sprintf("mcp_id IN ? AND %s", msRange(to.Add(-time.Duration(longest)*time.Minute), to))
	q := fmt.Sprintf(`SELECT mcp_id, key, toUInt32(%s) AS m, toInt64(count()), toInt64(sum(is_error))
		FROM %s.events
		ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
		WHERE %s
		GROUP BY mcp_id, key, m`, bucket, db.db, where)
	type minuteRow struct {
		mcpID, key    string
		m             uint32
		calls, errors int64
	}
	var rows []minuteRow
	err := db.query(ctx, "window sets", q, []any{clickhouse.GroupSet{Value: ids}}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.m, &r.calls, &r.errors}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		for _, w := range reqs[r.mcpID].Minutes {
			if int(r.m) >= w {
				continue
			}
			st := windowEntry(out, r.mcpID, w)
			s := st[r.key]
			s.Calls += r.calls
			s.Errors += r.errors
			st[r.key] = s
		}
	}
	if len(p95IDs) == 0 {
		return out, nil
	}
	// Percentiles and distinct counts: per-minute states merged into each
	// detail window of the MCP; the windows come as a literal array per
	// MCP, matched by position (18.16 has no map type).
	sort.Strings(p95IDs)
	mcpArr, winArr := make([]string, len(p95IDs)), make([]string, len(p95IDs))
	for i, id := range p95IDs {
		mcpArr[i] = QuoteString(id)
		ws := make([]string, len(reqs[id].DetailMinutes))
		for j, w := range reqs[id].DetailMinutes {
			ws[j] = strconv.Itoa(w)
		}
		winArr[i] = "[" + strings.Join(ws, ",") + "]"
	}
	pids := make([]any, len(p95IDs))
	for i, id := range p95IDs {
		pids[i] = id
	}
	q = fmt.Sprintf(`SELECT mcp_id, key, w, sum(d), quantilesTDigestIfMerge(0.5, 0.95, 0.99)(q),
			toInt64(uniqExactMerge(s)), toInt64(uniqExactMerge(u))
		FROM (
			SELECT mcp_id, key, toUInt32(%s) AS m, sum(has_duration) AS d,
				quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS q,
				uniqExactState(session_id) AS s, uniqExactState(user_key) AS u
			FROM %s.events
			ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
			WHERE %s
			GROUP BY mcp_id, key, m
		)
		ARRAY JOIN arrayElement(CAST([%s] AS Array(Array(UInt32))), indexOf([%s], mcp_id)) AS w
		WHERE w > m
		GROUP BY mcp_id, key, w`, bucket, db.db, where, strings.Join(winArr, ","), strings.Join(mcpArr, ","))
	type detailRow struct {
		mcpID, key      string
		w               uint32
		withDur         uint64
		qs              []float32
		sessions, users int64
	}
	var drows []detailRow
	err = db.query(ctx, "window set details", q, []any{clickhouse.GroupSet{Value: pids}}, func() []any {
		r := appendRow(&drows)
		return []any{&r.mcpID, &r.key, &r.w, &r.withDur, &r.qs, &r.sessions, &r.users}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range drows {
		st := windowEntry(out, r.mcpID, int(r.w))
		s := st[r.key]
		s.Sessions, s.Users = r.sessions, r.users
		if r.withDur > 0 {
			setQuantiles(&s, r.qs)
		}
		st[r.key] = s
	}
	return out, nil
}

// setQuantiles stores quantilesTDigest(0.5, 0.95, 0.99) into st.
func setQuantiles(st *analytics.WindowStat, qs []float32) {
	if len(qs) != 3 {
		return
	}
	p50, p95, p99 := quantile(qs[0]), quantile(qs[1]), quantile(qs[2])
	st.P50Ms, st.P95Ms, st.P99Ms = &p50, &p95, &p99
}

func windowEntry(out map[string]map[int]map[string]analytics.WindowStat, mcpID string, w int) map[string]analytics.WindowStat {
	if out[mcpID] == nil {
		out[mcpID] = map[int]map[string]analytics.WindowStat{}
	}
	if out[mcpID][w] == nil {
		out[mcpID][w] = map[string]analytics.WindowStat{}
	}
	return out[mcpID][w]
}
