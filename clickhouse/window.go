package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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
func (db *Reads) WindowStats(ctx context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error) {
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

var _ analytics.WindowSetReader = (*Reads)(nil)

// WindowSets implements analytics.WindowSetReader with two scans of events
// that both return a handful of rows per MCP and key, whatever the length
// of the windows:
//
//   - the counts: the chunk's distinct window lengths w1 < w2 < ... < wn
//     cut the longest window into n bands (an event of minute m before to
//     lies in band i when w(i-1) <= m < wi, found by a lookup array over
//     the minutes); ClickHouse counts each MCP, key and band, and Go sums
//     the bands up to each window (a window wi holds bands 1..i);
//   - the details (percentiles, distinct counts), when some windows want
//     them: the same bands over the distinct detail lengths only, so the
//     scan covers the longest detail window, not the longest window, and
//     only the keys the request names; each band's t-digest and uniqExact
//     states are merged into the MCP's detail windows that hold the band.
//
// An event belongs to a window of w minutes when to - w·60 s <= its time
// < to, to the millisecond, as in WindowStats.
func (db *Reads) WindowSets(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
	out := make(map[string]map[int]map[string]analytics.WindowStat, len(reqs))
	var ids, detailIDs []string
	var lengths, detailLengths []int
	for id, r := range reqs {
		if len(r.Minutes) == 0 {
			continue
		}
		ids = append(ids, id)
		lengths = append(lengths, r.Minutes...)
		if len(r.DetailMinutes) > 0 {
			detailIDs = append(detailIDs, id)
			detailLengths = append(detailLengths, r.DetailMinutes...)
		}
	}
	lengths, detailLengths = bandEdges(lengths), bandEdges(detailLengths)
	if len(ids) == 0 || len(lengths) == 0 {
		return out, nil
	}
	sort.Strings(ids)
	sort.Strings(detailIDs)
	var counts, details error
	var wg sync.WaitGroup
	var detailOut map[string]map[int]map[string]analytics.WindowStat
	if len(detailIDs) > 0 && len(detailLengths) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			detailOut, details = db.windowDetails(ctx, to, reqs, detailIDs, detailLengths)
		}()
	}
	counts = db.windowCounts(ctx, to, reqs, ids, lengths, out)
	wg.Wait()
	if err := errors.Join(counts, details); err != nil {
		return nil, err
	}
	for id, ws := range detailOut {
		for w, keys := range ws {
			for key, d := range keys {
				st := windowEntry(out, id, w)
				s := st[key]
				s.Sessions, s.Users = d.Sessions, d.Users
				s.P50Ms, s.P95Ms, s.P99Ms = d.P50Ms, d.P95Ms, d.P99Ms
				st[key] = s
			}
		}
	}
	return out, nil
}

var _ analytics.WindowSetBatchReader = (*Reads)(nil)

// WindowSetsBatch implements analytics.WindowSetBatchReader: the reads run
// concurrently, each as WindowSets.
func (db *Reads) WindowSetsBatch(ctx context.Context, reads []analytics.WindowRead) ([]map[string]map[int]map[string]analytics.WindowStat, error) {
	out := make([]map[string]map[int]map[string]analytics.WindowStat, len(reads))
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = db.WindowSets(ctx, r.To, r.Reqs)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// bandEdges returns the distinct positive lengths, ascending.
func bandEdges(ws []int) []int {
	out := slices.DeleteFunc(slices.Clone(ws), func(w int) bool { return w <= 0 })
	slices.Sort(out)
	return slices.Compact(out)
}

// minuteOf is how many whole minutes before to an event lies: 0 for
// (to - 60 s, to), so a window of w minutes holds minutes 0..w-1.
func minuteOf(to time.Time) string {
	return fmt.Sprintf("intDiv(%d - (toInt64(ts) * 1000 + ts_ms) - 1, 60000)", to.UnixMilli())
}

// bandOf is the ClickHouse expression of an event's band (1-based) among
// the ascending edges: a lookup array indexed by the event's minute, which
// the WHERE clause keeps below the last edge.
func bandOf(to time.Time, edges []int) string {
	var b strings.Builder
	b.WriteString("arrayElement(CAST([")
	band := 1
	for m := 0; m < edges[len(edges)-1]; m++ {
		for m >= edges[band-1] {
			band++
		}
		if m > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(band))
	}
	fmt.Fprintf(&b, "] AS Array(UInt16)), toUInt32(%s) + 1)", minuteOf(to))
	return b.String()
}

func intList(ws []int) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = strconv.Itoa(w)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// windowCounts fills out with the calls and errors of every window of
// reqs: one row per MCP and key, whose arrays hold the totals of the MCP's
// windows in ascending order (see WindowSets). The events are counted per
// band first, then each band's counts are summed into the MCP's windows
// that hold it (sumForEach over the windows, so a scan's work per event
// does not grow with the number of windows).
func (db *Reads) windowCounts(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest, ids []string, edges []int, out map[string]map[int]map[string]analytics.WindowStat) error {
	where := fmt.Sprintf("mcp_id IN ? AND %s", msRange(to.Add(-time.Duration(edges[len(edges)-1])*time.Minute), to))
	windows := make(map[string][]int, len(ids))
	winArr := make([]string, len(ids))
	for i, id := range ids {
		windows[id] = bandEdges(reqs[id].Minutes)
		winArr[i] = intList(windows[id])
	}
	ws := fmt.Sprintf("arrayElement(CAST([%s] AS Array(Array(UInt32))), %s)", strings.Join(winArr, ","), mcpIndex(ids))
	// The lambdas take the band's edge and counts as arrays, since 18.16's
	// lambdas cannot read columns in an aggregate function's arguments.
	q := fmt.Sprintf(`SELECT mcp_id, key,
			sumForEach(arrayMap((w, x, n) -> if(x <= w, n, 0), %[1]s AS ws, arrayResize(CAST([] AS Array(UInt32)), length(ws), edge), arrayResize(CAST([] AS Array(UInt64)), length(ws), c))),
			sumForEach(arrayMap((w, x, n) -> if(x <= w, n, 0), ws, arrayResize(CAST([] AS Array(UInt32)), length(ws), edge), arrayResize(CAST([] AS Array(UInt64)), length(ws), e)))
		FROM (
			SELECT mcp_id, key, arrayElement(CAST(%[2]s AS Array(UInt32)), %[3]s) AS edge, count() AS c, toUInt64(sum(is_error)) AS e
			FROM %[4]s.events
			ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
			WHERE %[5]s
			GROUP BY mcp_id, key, edge
		)
		GROUP BY mcp_id, key`, ws, intList(edges), bandOf(to, edges), db.db, where)
	type totalsRow struct {
		mcpID, key    string
		calls, errors []uint64
	}
	var rows []totalsRow
	err := db.query(ctx, "window sets", q, []any{clickhouse.GroupSet{Value: anyList(ids)}}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.calls, &r.errors}
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		ws := windows[r.mcpID]
		if len(r.calls) != len(ws) || len(r.errors) != len(ws) {
			return fmt.Errorf("window sets: %d and %d totals for %d windows of %s", len(r.calls), len(r.errors), len(ws), r.mcpID)
		}
		for i, w := range ws {
			if r.calls[i] == 0 {
				// No event of the key in this window (the key is in a
				// longer one).
				continue
			}
			st := windowEntry(out, r.mcpID, w)
			s := st[r.key]
			s.Calls, s.Errors = int64(r.calls[i]), int64(r.errors[i])
			st[r.key] = s
		}
	}
	return nil
}

// mcpIndex is the ClickHouse expression of an event's MCP's position
// (1-based) in ids, found in a hash table (transform), not by a scan of
// the list as indexOf would.
func mcpIndex(ids []string) string {
	quoted, pos := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		quoted[i], pos[i] = QuoteString(id), strconv.Itoa(i+1)
	}
	return fmt.Sprintf("transform(mcp_id, [%s], CAST([%s] AS Array(UInt32)), toUInt32(0))", strings.Join(quoted, ","), strings.Join(pos, ","))
}

// windowDetails measures the percentiles and distinct counts of the
// detail windows of reqs (see WindowSets). Per MCP, literal arrays matched
// by position (18.16 has no map type) give its detail windows, its
// longest one (which bounds its events) and the keys wanted. The distinct
// counts are left out when every MCP wants the percentiles only.
func (db *Reads) windowDetails(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest, ids []string, edges []int) (map[string]map[int]map[string]analytics.WindowStat, error) {
	out := map[string]map[int]map[string]analytics.WindowStat{}
	winArr, longArr := make([]string, len(ids)), make([]string, len(ids))
	// The keys: every key of the MCPs without DetailKeys, the named ones
	// of the others.
	var allKeys, keyTuples []string
	for i, id := range ids {
		ws := bandEdges(reqs[id].DetailMinutes)
		winArr[i], longArr[i] = intList(ws), strconv.Itoa(ws[len(ws)-1])
		if reqs[id].DetailKeys == nil {
			allKeys = append(allKeys, QuoteString(id))
		}
		for _, k := range reqs[id].DetailKeys {
			keyTuples = append(keyTuples, fmt.Sprintf("(%s, %s)", QuoteString(id), QuoteString(k)))
		}
	}
	var keyConds []string
	if len(allKeys) > 0 {
		keyConds = append(keyConds, fmt.Sprintf("mcp_id IN (%s)", strings.Join(allKeys, ",")))
	}
	if len(keyTuples) > 0 {
		slices.Sort(keyTuples)
		keyConds = append(keyConds, fmt.Sprintf("(mcp_id, key) IN (%s)", strings.Join(slices.Compact(keyTuples), ",")))
	}
	if len(keyConds) == 0 {
		return out, nil
	}
	idx := mcpIndex(ids)
	// The distinct counts, unless every MCP wants the percentiles only.
	distinctStates, distinct := "", "toInt64(0), toInt64(0)"
	for _, id := range ids {
		if !reqs[id].QuantilesOnly {
			distinctStates, distinct = ", uniqExactState(session_id) AS s, uniqExactState(user_key) AS u", "toInt64(uniqExactMerge(s)), toInt64(uniqExactMerge(u))"
			break
		}
	}
	where := fmt.Sprintf("mcp_id IN ? AND %s AND %s < arrayElement(CAST([%s] AS Array(UInt32)), %s)",
		msRange(to.Add(-time.Duration(edges[len(edges)-1])*time.Minute), to), minuteOf(to), strings.Join(longArr, ","), idx)
	if len(allKeys) < len(ids) {
		where += " AND (" + strings.Join(keyConds, " OR ") + ")"
	}
	q := fmt.Sprintf(`SELECT mcp_id, key, w, sum(d), quantilesTDigestIfMerge(0.5, 0.95, 0.99)(q), %s
		FROM (
			SELECT mcp_id, key, arrayElement(CAST(%s AS Array(UInt32)), %s) AS edge, sum(has_duration) AS d,
				quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS q%s
			FROM %s.events
			ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
			WHERE %s
			GROUP BY mcp_id, key, edge
		)
		ARRAY JOIN arrayElement(CAST([%s] AS Array(Array(UInt32))), %s) AS w
		WHERE w >= edge
		GROUP BY mcp_id, key, w`, distinct, intList(edges), bandOf(to, edges), distinctStates, db.db, where, strings.Join(winArr, ","), idx)
	type detailRow struct {
		mcpID, key      string
		w               uint32
		withDur         uint64
		qs              []float32
		sessions, users int64
	}
	var rows []detailRow
	err := db.query(ctx, "window set details", q, []any{clickhouse.GroupSet{Value: anyList(ids)}}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.w, &r.withDur, &r.qs, &r.sessions, &r.users}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		var s analytics.WindowStat
		if !reqs[r.mcpID].QuantilesOnly {
			s.Sessions, s.Users = r.sessions, r.users
		}
		if r.withDur > 0 {
			setQuantiles(&s, r.qs)
		}
		windowEntry(out, r.mcpID, int(r.w))[r.key] = s
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
