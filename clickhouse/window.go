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

	chproto "github.com/ClickHouse/ch-go/proto"
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
	return out, db.addWindowKinds(ctx, from, to, ids, out)
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

// WindowSets implements analytics.WindowSetReader as a batch of one read
// (see WindowSetsBatch).
func (db *Reads) WindowSets(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
	out, err := db.WindowSetsBatch(ctx, []analytics.WindowRead{{To: to, Reqs: reqs}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

var _ analytics.WindowSetBatchReader = (*Reads)(nil)

// WindowSetsBatch implements analytics.WindowSetBatchReader with scans of
// events that return a handful of rows per MCP and key, whatever the
// length of the windows, every statement of every read at once (a
// chunk's windows and the same windows a week earlier are two reads, so
// four statements at most; see docs/alerting.md#the-evaluator):
//
//   - the counts, per read: the read's distinct window lengths
//     w1 < w2 < ... < wn cut its longest window into n bands (an event of
//     minute m before the read's end lies in band i when w(i-1) <= m < wi,
//     found by a lookup array over the minutes); ClickHouse counts each
//     MCP, key and band, then sums the bands into the MCP's windows that
//     hold them (a window wi holds bands 1..i) with sumForEach, one row
//     per MCP and key;
//   - the details (percentiles, distinct counts), per read that wants
//     them: the same bands over the distinct detail lengths only, so the
//     scan covers the longest detail window, not the longest window, and
//     only the keys the request names; each band's t-digest and uniqExact
//     states are merged into the MCP's detail windows that hold the band.
//
// A statement of a read reads its own time range only: a week-ago read
// beside the current one is a statement of its own, which ClickHouse runs
// on another core while the current read's statements run, instead of
// lengthening the current read's counts statement. When any statement
// fails the batch fails whole: no read's answer is returned.
//
// The statements name each distinct set of windows once (most MCPs of a
// pass share theirs) and find an MCP's set by a lookup: on 18.16 the
// analysis of a statement grows with the size of its literals, which was
// most of a chunk's time. An event belongs to a window of w minutes when
// to - w·60 s <= its time < to, to the millisecond, as in WindowStats.
func (db *Reads) WindowSetsBatch(ctx context.Context, reads []analytics.WindowRead) ([]map[string]map[int]map[string]analytics.WindowStat, error) {
	out := make([]map[string]map[int]map[string]analytics.WindowStat, len(reads))
	prepared := make([]windowRead, len(reads))
	for i, r := range reads {
		out[i] = make(map[string]map[int]map[string]analytics.WindowStat, len(r.Reqs))
		prepared[i] = prepareWindowRead(r)
	}
	details := make([]map[string]map[int]map[string]analytics.WindowStat, len(reads))
	errs := make([]error, 2*len(reads))
	var wg sync.WaitGroup
	for i, p := range prepared {
		if len(p.detailIDs) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				details[i], errs[i] = db.windowDetails(ctx, p)
			}()
		}
		if len(p.ids) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[len(reads)+i] = db.windowCounts(ctx, p, out[i])
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, d := range details {
		for id, ws := range d {
			for w, keys := range ws {
				for key, st := range keys {
					e := windowEntry(out[i], id, w)
					s := e[key]
					s.Sessions, s.Users = st.Sessions, st.Users
					s.P50Ms, s.P95Ms, s.P99Ms = st.P50Ms, st.P95Ms, st.P99Ms
					e[key] = s
				}
			}
		}
	}
	return out, nil
}

// windowRead is one read of a batch as its statements need it: the MCPs
// with windows and with detail windows (sorted), and the distinct window
// and detail window lengths, ascending.
type windowRead struct {
	to                 time.Time
	reqs               map[string]analytics.WindowRequest
	ids, detailIDs     []string
	edges, detailEdges []int
}

func prepareWindowRead(r analytics.WindowRead) windowRead {
	p := windowRead{to: r.To, reqs: r.Reqs}
	var lengths, detailLengths []int
	for id, q := range r.Reqs {
		if len(bandEdges(q.Minutes)) == 0 {
			continue
		}
		p.ids = append(p.ids, id)
		lengths = append(lengths, q.Minutes...)
		if len(bandEdges(q.DetailMinutes)) > 0 {
			p.detailIDs = append(p.detailIDs, id)
			detailLengths = append(detailLengths, q.DetailMinutes...)
		}
	}
	sort.Strings(p.ids)
	sort.Strings(p.detailIDs)
	p.edges, p.detailEdges = bandEdges(lengths), bandEdges(detailLengths)
	return p
}

// bandEdges returns the distinct positive lengths, ascending.
func bandEdges(ws []int) []int {
	out := slices.DeleteFunc(slices.Clone(ws), func(w int) bool { return w <= 0 })
	slices.Sort(out)
	return slices.Compact(out)
}

// minuteOf is how many whole minutes before the end toMs (an Int64
// expression of Unix milliseconds) an event lies: 0 for (to - 60 s, to),
// so a window of w minutes holds minutes 0..w-1.
func minuteOf(toMs string) string {
	return fmt.Sprintf("intDiv(%s - (toInt64(ts) * 1000 + ts_ms) - 1, 60000)", toMs)
}

// bandOf is the ClickHouse expression of an event's band (1-based) among
// the ascending edges, given its minute: a lookup array indexed by the
// minute, which the WHERE clause keeps below the last edge.
func bandOf(minute string, edges []int) string {
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
	fmt.Fprintf(&b, "] AS Array(UInt16)), toUInt32(%s) + 1)", minute)
	return b.String()
}

func intList(ws []int) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = strconv.Itoa(w)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// windowSets names the distinct window sets of a statement once: sets
// lists them (as intList), and each MCP of a read gets the 1-based
// position of its set.
type windowSets struct {
	sets  []string
	index map[string]int
}

func (s *windowSets) add(ws []int) int {
	l := intList(ws)
	if s.index == nil {
		s.index = map[string]int{}
	}
	if i, ok := s.index[l]; ok {
		return i
	}
	s.sets = append(s.sets, l)
	s.index[l] = len(s.sets)
	return len(s.sets)
}

// literal is the sets as an Array(Array(UInt32)) literal.
func (s *windowSets) literal() string {
	return fmt.Sprintf("CAST([%s] AS Array(Array(UInt32)))", strings.Join(s.sets, ","))
}

// setOf is the ClickHouse expression of an event's MCP's set among ids,
// whose sets are pos (matched by position): a constant when they all
// share one, else a lookup in a hash table (transform).
func setOf(ids []string, pos []int) string {
	if len(pos) > 0 && !slices.ContainsFunc(pos, func(p int) bool { return p != pos[0] }) {
		return fmt.Sprintf("toUInt32(%d)", pos[0])
	}
	quoted, ps := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		quoted[i], ps[i] = QuoteString(id), strconv.Itoa(pos[i])
	}
	return fmt.Sprintf("transform(mcp_id, [%s], CAST([%s] AS Array(UInt32)), toUInt32(0))", strings.Join(quoted, ","), strings.Join(ps, ","))
}

// idSet is the set of a statement's MCPs ([]string parameter) for
// mcp_id IN: one array literal, which 18.16 parses and analyses as one
// node, where a list of 1,000 literals took it about 10 ms of CPU per
// statement; the primary key still selects the MCPs' granules by it.
const idSet = "(SELECT arrayJoin(CAST(? AS Array(String))))"

// idLiteral is idSet with ids written in, for nativeQuery, which binds no
// parameters.
func idLiteral(ids []string) string {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = QuoteString(id)
	}
	return "(SELECT arrayJoin(CAST([" + strings.Join(quoted, ",") + "] AS Array(String))))"
}

// windowCounts fills out with the calls and errors of every window of
// the read, in one statement (see WindowSetsBatch) that counts the events
// per MCP, tool (for tools/call) and band: one row per MCP, tool and band
// edge, read column by column (nativeQuery). countsFold then adds each
// band into the MCP's windows that hold it, under the MCP's key "" and
// the tool's key, so a scan's work per event grows neither with the
// number of windows nor with the keys an event counts under, and the
// statement has no outer aggregation for 18.16 to analyse.
func (db *Reads) windowCounts(ctx context.Context, p windowRead, out map[string]map[int]map[string]analytics.WindowStat) error {
	windows := make(map[string][]int, len(p.ids))
	for _, id := range p.ids {
		windows[id] = bandEdges(p.reqs[id].Minutes)
	}
	minute := minuteOf(strconv.FormatInt(p.to.UnixMilli(), 10))
	longest := time.Duration(p.edges[len(p.edges)-1]) * time.Minute
	// tc is cast: 18.16 compares a LowCardinality column into a
	// LowCardinality(UInt8).
	q := fmt.Sprintf(`SELECT mcp_id, CAST(method = 'tools/call' AS UInt8) AS tc, if(tc, name, '') AS tool,
			arrayElement(CAST(%s AS Array(UInt32)), %s) AS edge, count() AS c, toUInt64(sum(is_error)) AS e,
			CAST(error_kind AS String) AS kind
		FROM %s.events
		PREWHERE %s
		WHERE mcp_id IN %s
		GROUP BY mcp_id, tc, tool, edge, kind`, intList(p.edges), bandOf(minute, p.edges), db.db, msRange(p.to.Add(-longest), p.to), idLiteral(p.ids))
	var cols countCols
	f := newCountsFold(windows)
	err := db.nativeQuery(ctx, "window sets", q, cols.results(), func(rows int) error {
		for i := range rows {
			f.add(cols.mcp.Row(i), cols.tc[i] == 1, cols.tool.Row(i), int(cols.edge[i]), cols.c[i], cols.e[i], cols.kind.Row(i))
		}
		return nil
	})
	if err != nil {
		return err
	}
	f.store(out)
	return nil
}

// countCols are the columns of windowCounts' statement.
type countCols struct {
	mcp, tool chproto.ColStr
	kind      chproto.ColStr
	tc        chproto.ColUInt8
	edge      chproto.ColUInt32
	c, e      chproto.ColUInt64
}

func (c *countCols) results() chproto.Results {
	return chproto.Results{{Name: "mcp_id", Data: &c.mcp}, {Name: "tc", Data: &c.tc}, {Name: "tool", Data: &c.tool},
		{Name: "edge", Data: &c.edge}, {Name: "c", Data: &c.c}, {Name: "e", Data: &c.e},
		{Name: "kind", Data: &c.kind}}
}

// countsFold adds windowCounts' bands into the windows of each MCP and
// key: totals[mcp][key] holds the calls of the MCP's windows (ascending),
// then their errors.
type countsFold struct {
	windows map[string][]int
	totals  map[string]map[string][]uint64
	// kinds[mcp][key][kind] holds the errors of that kind of the MCP's
	// windows (ascending).
	kinds map[string]map[string]map[string][]uint64
}

func newCountsFold(windows map[string][]int) *countsFold {
	return &countsFold{windows: windows, totals: make(map[string]map[string][]uint64, len(windows)),
		kinds: map[string]map[string]map[string][]uint64{}}
}

// add counts c events, e of them errors, of the band ending at edge
// minutes into every window of the MCP of at least edge minutes, under
// the key "" and, for tools/call (tc), the tool's key; the errors also
// under their kind, when they have one.
func (f *countsFold) add(mcpID string, tc bool, tool string, edge int, c, e uint64, kind string) {
	ws := f.windows[mcpID]
	first, _ := slices.BinarySearch(ws, edge)
	if first == len(ws) {
		return // beyond the MCP's longest window
	}
	keys := f.totals[mcpID]
	if keys == nil {
		keys = map[string][]uint64{}
		f.totals[mcpID] = keys
	}
	for k, key := range [2]string{"", tool} {
		if k == 1 && !tc {
			break
		}
		t := keys[key]
		if t == nil {
			t = make([]uint64, 2*len(ws))
			keys[key] = t
		}
		for i := first; i < len(ws); i++ {
			t[i] += c
			t[len(ws)+i] += e
		}
		if kind != "" && e > 0 {
			f.addKind(mcpID, key, kind, first, e)
		}
	}
}

// store writes the totals into out: each MCP's windows with a call of
// the key (a key without one in a window is in a longer one).
func (f *countsFold) store(out map[string]map[int]map[string]analytics.WindowStat) {
	for id, keys := range f.totals {
		ws := f.windows[id]
		byWindow := out[id]
		if byWindow == nil {
			byWindow = make(map[int]map[string]analytics.WindowStat, len(ws))
			out[id] = byWindow
		}
		for i, w := range ws {
			st := byWindow[w]
			for key, t := range keys {
				if t[i] == 0 {
					continue
				}
				if st == nil {
					st = make(map[string]analytics.WindowStat, len(keys))
					byWindow[w] = st
				}
				s := st[key]
				s.Calls, s.Errors = int64(t[i]), int64(t[len(ws)+i])
				for kind, k := range f.kinds[id][key] {
					if k[i] > 0 {
						if s.ErrorKinds == nil {
							s.ErrorKinds = map[string]int64{}
						}
						s.ErrorKinds[kind] = int64(k[i])
					}
				}
				st[key] = s
			}
		}
	}
}

// detailRow is a row of windowDetails' statement.
type detailRow struct {
	mcpID, key      string
	w               uint32
	withDur         uint64
	qs              []float32
	sessions, users int64
}

// windowDetails measures the percentiles and distinct counts of the
// detail windows of a read (see WindowSetsBatch). Each MCP's set of
// detail windows bounds its events by the longest one; the keys are every
// key of the MCPs without DetailKeys, the named ones of the others. The
// distinct counts are left out when every MCP wants the percentiles only.
func (db *Reads) windowDetails(ctx context.Context, p windowRead) (map[string]map[int]map[string]analytics.WindowStat, error) {
	out := map[string]map[int]map[string]analytics.WindowStat{}
	ids, edges, reqs := p.detailIDs, p.detailEdges, p.reqs
	var sets windowSets
	var longest []string
	pos := make([]int, len(ids))
	var allKeys, keyed []string
	wanted := map[string]map[string]bool{} // the keys of the MCPs with DetailKeys
	named := map[string]bool{}
	for i, id := range ids {
		ws := bandEdges(reqs[id].DetailMinutes)
		if pos[i] = sets.add(ws); pos[i] > len(longest) {
			longest = append(longest, strconv.Itoa(ws[len(ws)-1]))
		}
		if reqs[id].DetailKeys == nil {
			allKeys = append(allKeys, QuoteString(id))
			continue
		}
		wanted[id] = map[string]bool{}
		for _, k := range reqs[id].DetailKeys {
			if !wanted[id][k] {
				wanted[id][k] = true
				named[k] = true
				// The MCP and key as one string, NUL apart (an id has no
				// NUL; written \0, as a C string cannot hold it): a flat
				// list of literals, cheaper for 18.16 to analyse than a
				// list of tuples.
				keyed = append(keyed, strings.ReplaceAll(QuoteString(id+"\x00"+k), "\x00", `\0`))
			}
		}
	}
	keyConds := detailKeyConds(allKeys, keyed, wanted, named)
	if len(keyConds) == 0 {
		return out, nil
	}
	idx := setOf(ids, pos)
	distinctStates, distinct := distinctExprs(ids, reqs)
	to := p.to
	minute := minuteOf(strconv.FormatInt(to.UnixMilli(), 10))
	prewhere, where := msRange(to.Add(-time.Duration(edges[len(edges)-1])*time.Minute), to), "mcp_id IN "+idSet
	if len(longest) > 1 {
		where += fmt.Sprintf(" AND %s < arrayElement(CAST([%s] AS Array(UInt32)), %s)", minute, strings.Join(longest, ","), idx)
	}
	if len(allKeys) < len(ids) {
		where += " AND (" + strings.Join(keyConds, " OR ") + ")"
	}
	q := fmt.Sprintf(`SELECT mcp_id, key, w, sum(d), quantilesTDigestIfMerge(0.5, 0.95, 0.99)(q), %s
		FROM (
			SELECT mcp_id, key, arrayElement(CAST(%s AS Array(UInt32)), %s) AS edge, sum(has_duration) AS d,
				quantilesTDigestIfState(0.5, 0.95, 0.99)(duration_ms, has_duration) AS q%s
			FROM %s.events
			ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
			PREWHERE %s
			WHERE %s
			GROUP BY mcp_id, key, edge
		)
		ARRAY JOIN arrayElement(%s, %s) AS w
		WHERE w >= edge
		GROUP BY mcp_id, key, w`, distinct, intList(edges), bandOf(minute, edges), distinctStates, db.db, prewhere, where, sets.literal(), idx)
	var rows []detailRow
	err := db.query(ctx, "window set details", q, []any{ids}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.w, &r.withDur, &r.qs, &r.sessions, &r.users}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if w := wanted[r.mcpID]; w == nil || w[r.key] {
			windowEntry(out, r.mcpID, int(r.w))[r.key] = r.stat(reqs[r.mcpID].QuantilesOnly)
		}
	}
	return out, nil
}

// stat is the row's figures; the distinct counts unless quantilesOnly.
func (r *detailRow) stat(quantilesOnly bool) analytics.WindowStat {
	var s analytics.WindowStat
	if !quantilesOnly {
		s.Sessions, s.Users = r.sessions, r.users
	}
	if r.withDur > 0 {
		setQuantiles(&s, r.qs)
	}
	return s
}

// distinctExprs are the distinct counts' states and merges of
// windowDetails' statement, unless every MCP wants the percentiles only.
func distinctExprs(ids []string, reqs map[string]analytics.WindowRequest) (states, merges string) {
	for _, id := range ids {
		if !reqs[id].QuantilesOnly {
			return ", uniqExactState(session_id) AS s, uniqExactState(user_key) AS u", "toInt64(uniqExactMerge(s)), toInt64(uniqExactMerge(u))"
		}
	}
	return "", "toInt64(0), toInt64(0)"
}

// detailKeyConds are the conditions that choose windowDetails' keys: every
// key of the MCPs in allKeys, and the named ones (keyed, as "mcp\0key"
// literals) of the others.
func detailKeyConds(allKeys, keyed []string, wanted map[string]map[string]bool, named map[string]bool) []string {
	var keyConds []string
	if len(allKeys) > 0 {
		keyConds = append(keyConds, fmt.Sprintf("mcp_id IN (%s)", strings.Join(allKeys, ",")))
	}
	if len(keyed) > 0 {
		if len(wanted)*len(named) <= 2*len(keyed) {
			// The MCPs name much the same keys (a pass's p95 rules on
			// the whole MCP or on its main tools): the keys named by any,
			// at most twice the pairs wanted, are cheaper to filter on
			// than the pairs; the others are dropped below.
			names := make([]string, 0, len(named))
			for k := range named {
				names = append(names, QuoteString(k))
			}
			slices.Sort(names)
			keyConds = append(keyConds, fmt.Sprintf("key IN (%s)", strings.Join(names, ",")))
		} else {
			slices.Sort(keyed)
			keyConds = append(keyConds, fmt.Sprintf("concat(mcp_id, '\\0', key) IN (%s)", strings.Join(keyed, ",")))
		}
	}
	return keyConds
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
