package clickhouse_test

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// The fixture: a week of data (2026-03-01..07) for mcp-a, some for mcp-b
// (same account, same tool and user names, to catch leaks) and mcp-c
// (another account), plus items just outside the week, items in the four
// weeks before it (idle tools, nightly cohorts) and items accepted days
// after their timestamp (usage is by acceptance day).
var (
	day0     = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	week     = analytics.NewRange(day0, day0.AddDate(0, 0, 6))
	unicode  = "搜索/docs 🚀"
	resource = "file:///README.md"
)

const (
	acct1 = "acct-1"
	acct2 = "acct-2"
	mcpA  = "mcp-a"
	mcpB  = "mcp-b"
	mcpC  = "mcp-c"
)

// itemSpec is one item of the fixture; zero fields are absent.
type itemSpec struct {
	account, mcp      string
	ts                time.Time
	received          time.Time // zero: ts + 1 s
	session, method   string
	name              string
	dur               *float64
	errType, errMsg   string
	isErr             bool
	client, clientVer string
	user, id          string
}

func ms(v float64) *float64 { return &v }

func (s itemSpec) row(seq uint64) analytics.StoredRow {
	it := analytics.Item{
		ID: s.id, Timestamp: s.ts, SessionID: s.session, Method: s.method, Name: s.name,
		DurationMs: s.dur, ErrorType: s.errType, ErrorMessage: s.errMsg,
		ClientName: s.client, ClientVersion: s.clientVer, ServerVersion: "1.4.0", UserID: s.user,
		ProtocolVersion: fixtureProtocols[s.clientVer],
		Attributes:      map[string]string{"region": "eu", "seq": fmt.Sprint(seq)},
	}
	if s.isErr {
		it.Status = analytics.StatusError
	}
	it.Normalize()
	rec := s.received
	if rec.IsZero() {
		rec = s.ts.Add(time.Second)
	}
	return analytics.StoredRow{AccountID: s.account, MCPID: s.mcp, Node: "node-1", Seq: seq, ReceivedAt: rec, Item: it}
}

// fixtureProtocols gives each client version the protocol revision its
// items carry (none for the client that sends no version).
var fixtureProtocols = map[string]string{"0.9.1": "2025-03-26", "1.2.0": "2025-06-18"}

var clients = [][2]string{{"claude-desktop", "0.9.1"}, {"cursor", "1.2.0"}, {"", ""}}

func fixtureItems() []itemSpec {
	var items []itemSpec
	add := func(s itemSpec) {
		if s.account == "" {
			s.account = acct1
		}
		if s.mcp == "" {
			s.mcp = mcpA
		}
		items = append(items, s)
	}
	// search_docs: 100 calls over the week with durations 1..100 ms, six
	// sessions, users u0..u3 and none, 5 TimeoutErrors.
	for i := 0; i < 100; i++ {
		k := i % 6
		c := clients[k%3]
		s := itemSpec{
			ts:      day0.AddDate(0, 0, i%7).Add(time.Duration(i%24)*time.Hour + time.Duration(i)*time.Minute + 123*time.Millisecond),
			session: fmt.Sprintf("a-s%d", k), method: analytics.MethodToolsCall, name: "search_docs",
			dur: ms(float64(i + 1)), client: c[0], clientVer: c[1], id: fmt.Sprintf("a-%d", i),
		}
		if i%3 != 0 {
			s.user = fmt.Sprintf("u%d", i%4)
		}
		if i%20 == 7 {
			s.errType, s.errMsg = "TimeoutError", fmt.Sprintf("timeout #%d", i)
		}
		add(s)
	}
	// Each session's initialize, before its first call of the week.
	for k := 0; k < 6; k++ {
		c := clients[k%3]
		add(itemSpec{ts: day0.Add(time.Duration(k) * time.Second), session: fmt.Sprintf("a-s%d", k), method: "initialize",
			client: c[0], clientVer: c[1], dur: ms(2)})
	}
	// The unicode tool: 12 calls on 03-05, no duration, 3 errors without a type.
	for i := 0; i < 12; i++ {
		add(itemSpec{ts: day0.AddDate(0, 0, 4).Add(time.Duration(i) * time.Minute), session: "a-s1",
			method: analytics.MethodToolsCall, name: unicode, isErr: i < 3, errMsg: "boom", client: "cursor", clientVer: "1.2.0", user: "u1"})
	}
	// Both sides of midnight, inside the week and at its edges.
	for _, e := range []struct {
		ts      time.Time
		session string
		dur     float64
	}{
		{day0.AddDate(0, 0, 3).Add(-time.Millisecond), "a-midnight", 5}, // 03-03 23:59:59.999
		{day0.AddDate(0, 0, 3), "a-midnight", 7},                        // 03-04 00:00:00.000
		{day0.Add(-time.Millisecond), "a-out", 11},                      // 02-28 23:59:59.999
		{day0.AddDate(0, 0, 7), "a-out", 13},                            // 03-08 00:00:00.000
	} {
		add(itemSpec{ts: e.ts, session: e.session, method: analytics.MethodToolsCall, name: "edge", dur: ms(e.dur), user: "u-mid"})
	}
	// resources/read: 10 reads on 03-06 of 1 s, 2 NotFound.
	for i := 0; i < 10; i++ {
		s := itemSpec{ts: day0.AddDate(0, 0, 5).Add(time.Duration(i) * time.Hour), session: "a-s2", method: "resources/read",
			name: resource, dur: ms(1000), user: "u2"}
		if i >= 8 {
			s.errType, s.errMsg = "NotFound", fmt.Sprintf("no such resource %d", i)
		}
		add(s)
	}
	// old_tool: 4 calls on 02-10, accepted on 03-01 (late), idle in the week.
	for i := 0; i < 4; i++ {
		ts := day0.AddDate(0, 0, -19).Add(time.Duration(i) * time.Hour)
		add(itemSpec{ts: ts, received: day0.Add(time.Hour), session: "a-old", method: analytics.MethodToolsCall,
			name: "old_tool", dur: ms(40), user: "u-old"})
	}
	// Nightly cohorts: two users active on 02-25, one of them back on 03-03.
	add(itemSpec{ts: day0.AddDate(0, 0, -4), session: "a-r1", method: analytics.MethodToolsCall, name: "search_docs", user: "u-ret1"})
	add(itemSpec{ts: day0.AddDate(0, 0, -4), session: "a-r2", method: analytics.MethodToolsCall, name: "search_docs", user: "u-ret2"})
	add(itemSpec{ts: day0.AddDate(0, 0, 2).Add(5 * time.Hour), session: "a-r3", method: "prompts/get", name: "greet", user: "u-ret1"})

	// month_tool: calls spread over 2025-10..2026-01 and 2026-04, on both
	// sides of month boundaries, so that ranges of several months read
	// whole months from the monthly rollups and edge days from the daily
	// ones (away from February and May, which the nightly checks use).
	for i, ts := range []time.Time{
		time.Date(2025, 10, 31, 23, 59, 59, 999e6, time.UTC), time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 11, 15, 12, 0, 0, 0, time.UTC), time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 12, 20, 8, 30, 0, 0, time.UTC), time.Date(2025, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC), time.Date(2026, 1, 29, 18, 0, 0, 0, time.UTC),
		time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 30, 23, 59, 59, 999e6, time.UTC),
	} {
		c := clients[i%3]
		s := itemSpec{ts: ts, session: fmt.Sprintf("m-s%d", i%4), method: analytics.MethodToolsCall, name: "month_tool",
			dur: ms(float64(10 * (i + 1))), client: c[0], clientVer: c[1], user: fmt.Sprintf("u-m%d", i%3)}
		if i%3 == 1 {
			s.errType, s.errMsg = "MonthError", fmt.Sprintf("month error %d", i)
		}
		add(s)
	}
	add(itemSpec{ts: time.Date(2025, 12, 2, 0, 0, 0, 0, time.UTC), session: "m-s0", method: "resources/read", name: resource,
		isErr: true, errType: "NotFound", errMsg: "gone in December", user: "u-m0"})

	// mcp-b: same names, very different figures.
	for i := 0; i < 30; i++ {
		add(itemSpec{mcp: mcpB, ts: day0.AddDate(0, 0, 1).Add(time.Duration(i) * time.Minute), session: "b-s1",
			method: analytics.MethodToolsCall, name: "search_docs", dur: ms(5000), errType: "Leak", errMsg: "leaked",
			client: "leaky", clientVer: "6.6.6", user: "u1"})
	}
	// mcp-c: another account.
	for i := 0; i < 5; i++ {
		add(itemSpec{account: acct2, mcp: mcpC, ts: day0.AddDate(0, 0, 6).Add(time.Duration(i) * time.Minute), session: "c-s1",
			method: analytics.MethodToolsCall, name: "other", dur: ms(1)})
	}
	return items
}

func fixtureRows() []analytics.StoredRow {
	specs := fixtureItems()
	rows := make([]analytics.StoredRow, len(specs))
	for i, s := range specs {
		rows[i] = s.row(uint64(i + 1))
	}
	return rows
}

// ---- The oracle: every figure computed by brute force in Go. ----

type oracle struct{ rows []analytics.StoredRow }

func (o oracle) in(mcp string, r analytics.Range, keep func(it analytics.Item) bool) []analytics.Item {
	var out []analytics.Item
	for _, row := range o.rows {
		t := row.Item.Timestamp
		if row.MCPID == mcp && !t.Before(r.From) && t.Before(r.End()) && (keep == nil || keep(row.Item)) {
			out = append(out, row.Item)
		}
	}
	return out
}

func isTool(it analytics.Item) bool { return it.Method == analytics.MethodToolsCall }

// agg is the brute-force aggregate of a set of items.
type agg struct {
	calls, errors, sessions, users int64
	durations                      []float64
	last                           time.Time
}

func aggregate(items []analytics.Item) agg {
	var a agg
	sessions, users := map[string]bool{}, map[string]bool{}
	for _, it := range items {
		a.calls++
		if it.Status == analytics.StatusError {
			a.errors++
		}
		sessions[it.SessionID] = true
		users[clickhouse.UserKey(it.UserID, it.SessionID)] = true
		if it.DurationMs != nil {
			a.durations = append(a.durations, *it.DurationMs)
		}
		if it.Timestamp.After(a.last) {
			a.last = it.Timestamp
		}
	}
	a.sessions, a.users = int64(len(sessions)), int64(len(users))
	sort.Float64s(a.durations)
	return a
}

func (a agg) avg() *float64 {
	if len(a.durations) == 0 {
		return nil
	}
	var s float64
	for _, d := range a.durations {
		s += d
	}
	v := s / float64(len(a.durations))
	return &v
}

// percentileOK reports whether got is an acceptable estimate of quantile q
// of the sorted sample: within one percent of the sample's ranks (at least
// one rank) of the exact position, the accuracy t-digest promises.
func percentileOK(sorted []float64, q float64, got *float64) bool {
	if len(sorted) == 0 {
		return got == nil
	}
	if got == nil {
		return false
	}
	n := len(sorted)
	eps := int(math.Max(1, math.Ceil(0.01*float64(n))))
	pos := q * float64(n-1)
	lo := int(math.Floor(pos)) - eps
	hi := int(math.Ceil(pos)) + eps
	lo = max(lo, 0)
	hi = min(hi, n-1)
	return *got >= sorted[lo]-1e-3 && *got <= sorted[hi]+1e-3
}

func dayOf(t time.Time) string { return t.UTC().Format(analytics.DateLayout) }
