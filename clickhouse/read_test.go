package clickhouse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// TestReads inserts the fixture in three batches (so that every rollup
// holds unmerged rows for the same keys), checks every read against the
// brute-force oracle, then forces the merges and checks again: reads must
// not depend on when ClickHouse merges.
func TestReads(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	third := len(rows) / 3
	for _, part := range [][]analytics.StoredRow{rows[:third], rows[third : 2*third], rows[2*third:]} {
		if err := db.InsertRows(ctx, part); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	o := oracle{rows: rows}
	checkAll := func(t *testing.T) {
		parallel(t, "overview", func(t *testing.T) { testOverview(t, db, o) })
		parallel(t, "tools", func(t *testing.T) { testTools(t, db, o) })
		parallel(t, "tool", func(t *testing.T) { testTool(t, db, o) })
		parallel(t, "insights", func(t *testing.T) { testInsights(t, db, o) })
		parallel(t, "sessions", func(t *testing.T) { testSessions(t, db, o) })
		parallel(t, "usage", func(t *testing.T) { testUsage(t, db, o) })
		parallel(t, "window", func(t *testing.T) { testWindowStats(t, db, o) })
		parallel(t, "window sets", func(t *testing.T) { testWindowSets(t, db, o) })
		parallel(t, "window sets random", func(t *testing.T) { testWindowSetsRandom(t, db, o) })
		parallel(t, "window totals random", func(t *testing.T) { testWindowTotalsRandom(t, db, o) })
	}
	t.Run("unmerged", checkAll)
	for _, table := range []string{"events", "mcp_daily", "tool_daily", "session_daily", "error_daily", "client_daily", "tool_client_daily", "user_daily", "usage_daily",
		"tool_monthly", "error_monthly", "client_monthly"} {
		if err := db.OptimizeFinal(ctx, table); err != nil {
			t.Fatalf("optimize %s: %v", table, err)
		}
	}
	t.Run("merged", checkAll)
	t.Run("window sets batch fails whole", func(t *testing.T) { testWindowSetsBatchFails(t, db) })
	t.Run("window sets after the idle connections dropped", func(t *testing.T) { testWindowSetsRedial(t, db) })
}

// parallel runs f as a subtest beside its parallel siblings: reads of a
// fixture that nothing writes to until the parent's t.Run returns (which
// waits for them).
func parallel(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		f(t)
	})
}

func ranges() []analytics.Range {
	return []analytics.Range{
		week,
		analytics.NewRange(day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 2)), // 03-03: the 23:59:59.999 item
		analytics.NewRange(day0.AddDate(0, 0, 3), day0.AddDate(0, 0, 3)), // 03-04: the 00:00:00.000 item
		analytics.NewRange(day0.AddDate(0, 0, -30), day0.AddDate(0, 0, 10)),
		analytics.NewRange(day0.AddDate(0, 0, 100), day0.AddDate(0, 0, 101)), // no data
		// Several whole months (read from the monthly rollups) with
		// partial months at both edges, at neither, at one.
		analytics.NewRange(date(2025, 10, 15), date(2026, 4, 20)),
		analytics.NewRange(date(2025, 10, 31), date(2026, 4, 1)),
		analytics.NewRange(date(2025, 11, 1), date(2026, 1, 31)),
		analytics.NewRange(date(2025, 11, 2), date(2025, 12, 31)),
		analytics.NewRange(date(2025, 12, 1), date(2026, 3, 4)),
	}
}

func date(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func testOverview(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	for _, mcp := range []string{mcpA, mcpB, mcpC, "mcp-none"} {
		for _, r := range ranges() {
			got, err := db.Overview(ctx, mcp, r)
			if err != nil {
				t.Fatalf("overview %s %v: %v", mcp, r, err)
			}
			want := aggregate(o.in(mcp, r, nil))
			where := mcp + " " + r.FromDate() + ".." + r.ToDate()
			if got.MCPID != mcp || got.From != r.FromDate() || got.To != r.ToDate() {
				t.Errorf("%s: echo %q %q %q", where, got.MCPID, got.From, got.To)
			}
			eq(t, where+" calls", got.Calls, want.calls)
			eq(t, where+" errors", got.Errors, want.errors)
			distinct(t, where+" sessions", got.Sessions, want.sessions)
			distinct(t, where+" users", got.Users, want.users)
			eqF(t, where+" error_rate", got.ErrorRate, analytics.ErrorRate(want.errors, want.calls))
			eqPtr(t, where+" avg_ms", got.AvgMs, want.avg())
			pctl(t, where+" p50", want.durations, 0.5, got.P50Ms)
			pctl(t, where+" p95", want.durations, 0.95, got.P95Ms)
			pctl(t, where+" p99", want.durations, 0.99, got.P99Ms)
			days := r.Days()
			if len(got.Series) != len(days) {
				t.Fatalf("%s: series has %d days, want %d", where, len(got.Series), len(days))
			}
			for i, d := range got.Series {
				dr := analytics.NewRange(r.From.AddDate(0, 0, i), r.From.AddDate(0, 0, i))
				w := aggregate(o.in(mcp, dr, nil))
				if d.Date != days[i] {
					t.Errorf("%s: series[%d].date = %s, want %s", where, i, d.Date, days[i])
				}
				eq(t, where+" "+d.Date+" calls", d.Calls, w.calls)
				eq(t, where+" "+d.Date+" errors", d.Errors, w.errors)
				distinct(t, where+" "+d.Date+" sessions", d.Sessions, w.sessions)
				distinct(t, where+" "+d.Date+" users", d.Users, w.users)
				pctl(t, where+" "+d.Date+" p95", w.durations, 0.95, d.P95Ms)
			}
		}
	}
	// Hand-checked figures, so that the oracle itself is checked too.
	a, _ := db.Overview(ctx, mcpA, week)
	// 100 search_docs + 6 initialize + 12 unicode + 2 edge + 10 reads + 1 prompt.
	eq(t, "mcp-a calls", a.Calls, 131)
	eq(t, "mcp-a errors", a.Errors, 5+3+2)
	// a-s0..5, a-midnight, a-r3.
	eq(t, "mcp-a sessions", a.Sessions, 8)
	// u0..u3, u-mid, u-ret1, and the sessions a-s0..a-s5 (their
	// initialize items carry no user id).
	eq(t, "mcp-a users", a.Users, 12)
	b, _ := db.Overview(ctx, mcpB, week)
	if b.Calls != 30 || b.Errors != 30 || b.ErrorRate != 1 || b.Sessions != 1 || b.Users != 1 || *b.AvgMs != 5000 || *b.P95Ms != 5000 {
		t.Errorf("mcp-b overview = %+v", b)
	}
	onlyEdge, _ := db.Overview(ctx, mcpA, analytics.NewRange(day0.AddDate(0, 0, 7), day0.AddDate(0, 0, 7)))
	if onlyEdge.Calls != 1 || *onlyEdge.AvgMs != 13 || onlyEdge.Series[0].Date != "2026-03-08" {
		t.Errorf("03-08 holds exactly the 00:00:00.000 item: %+v", onlyEdge)
	}
	none, _ := db.Overview(ctx, "mcp-none", week)
	if none.Calls != 0 || none.AvgMs != nil || none.P95Ms != nil || len(none.Series) != 7 || none.Series[6].P95Ms != nil {
		t.Errorf("empty overview = %+v", none)
	}
	// Before any nightly pass: null figures, null as-of.
	if none.NightlyAsOf != nil || none.Nightly.ActiveUsers28d != nil {
		t.Errorf("nightly before the first pass = %+v %v", none.Nightly, none.NightlyAsOf)
	}
	j, _ := json.Marshal(none)
	if !jsonHas(j, `"avg_ms":null`, `"nightly":{"active_users_28d":null,"stickiness":null,"retention_7d":null}`, `"nightly_as_of":null`) {
		t.Errorf("empty overview JSON: %s", j)
	}
}

func testTools(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	for _, mcp := range []string{mcpA, mcpB, "mcp-none"} {
		for _, r := range ranges() {
			got, err := db.Tools(ctx, mcp, r)
			if err != nil {
				t.Fatal(err)
			}
			want := toolAggs(o.in(mcp, r, isTool))
			where := mcp + " " + r.FromDate() + ".." + r.ToDate()
			if got.From != r.FromDate() || got.To != r.ToDate() || got.Items == nil {
				t.Errorf("%s: %+v", where, got)
			}
			if len(got.Items) != len(want) {
				t.Fatalf("%s: %d tools, want %d", where, len(got.Items), len(want))
			}
			for i, g := range got.Items {
				w := want[i]
				if g.Name != w.name {
					t.Fatalf("%s: tools[%d] = %q, want %q (by calls desc, then name)", where, i, g.Name, w.name)
				}
				eq(t, where+" "+g.Name+" calls", g.Calls, w.calls)
				eq(t, where+" "+g.Name+" errors", g.Errors, w.errors)
				distinct(t, where+" "+g.Name+" sessions", g.Sessions, w.sessions)
				eqF(t, where+" "+g.Name+" error_rate", g.ErrorRate, analytics.ErrorRate(w.errors, w.calls))
				eqPtr(t, where+" "+g.Name+" avg", g.AvgMs, w.avg())
				pctl(t, where+" "+g.Name+" p50", w.durations, 0.5, g.P50Ms)
				pctl(t, where+" "+g.Name+" p95", w.durations, 0.95, g.P95Ms)
				if !g.LastSeenAt.Equal(w.last) {
					t.Errorf("%s %s: last_seen_at %v, want %v", where, g.Name, g.LastSeenAt, w.last)
				}
			}
		}
	}
	got, _ := db.Tools(ctx, mcpA, week)
	var names []string
	for _, it := range got.Items {
		names = append(names, it.Name)
	}
	if want := []string{"search_docs", unicode, "edge"}; !slices.Equal(names, want) {
		t.Errorf("mcp-a tools = %q, want %q", names, want)
	}
	if u := got.Items[1]; u.Calls != 12 || u.Errors != 3 || u.AvgMs != nil || u.P50Ms != nil || u.P95Ms != nil {
		t.Errorf("unicode tool without durations = %+v", u)
	}
	if e := got.Items[2]; e.Calls != 2 || *e.AvgMs != 6 || !e.LastSeenAt.Equal(day0.AddDate(0, 0, 3)) {
		t.Errorf("edge tool = %+v", e)
	}
}

type toolAgg struct {
	name string
	agg
}

func toolAggs(items []analytics.Item) []toolAgg {
	by := map[string][]analytics.Item{}
	for _, it := range items {
		by[it.Name] = append(by[it.Name], it)
	}
	var out []toolAgg
	for name, its := range by {
		out = append(out, toolAgg{name, aggregate(its)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].calls != out[j].calls {
			return out[i].calls > out[j].calls
		}
		return out[i].name < out[j].name
	})
	return out
}

func testTool(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	for _, name := range []string{"search_docs", unicode, "edge", "old_tool", "no-such-tool", resource} {
		for _, r := range ranges() {
			got, err := db.Tool(ctx, mcpA, name, r)
			if err != nil {
				t.Fatal(err)
			}
			items := o.in(mcpA, r, func(it analytics.Item) bool { return isTool(it) && it.Name == name })
			w := aggregate(items)
			where := name + " " + r.FromDate() + ".." + r.ToDate()
			if got.Name != name || got.From != r.FromDate() || got.To != r.ToDate() {
				t.Errorf("%s: echo %q %q %q", where, got.Name, got.From, got.To)
			}
			eq(t, where+" calls", got.Calls, w.calls)
			eq(t, where+" errors", got.Errors, w.errors)
			eqF(t, where+" error_rate", got.ErrorRate, analytics.ErrorRate(w.errors, w.calls))
			eqPtr(t, where+" avg", got.AvgMs, w.avg())
			pctl(t, where+" p50", w.durations, 0.5, got.P50Ms)
			pctl(t, where+" p95", w.durations, 0.95, got.P95Ms)
			pctl(t, where+" p99", w.durations, 0.99, got.P99Ms)
			if len(got.Series) != r.NumDays() {
				t.Fatalf("%s: %d series days", where, len(got.Series))
			}
			for i, d := range got.Series {
				dr := analytics.NewRange(r.From.AddDate(0, 0, i), r.From.AddDate(0, 0, i))
				dw := aggregate(o.in(mcpA, dr, func(it analytics.Item) bool { return isTool(it) && it.Name == name }))
				if d.Date != dr.FromDate() || d.Calls != dw.calls || d.Errors != dw.errors {
					t.Errorf("%s: series[%d] = %+v, want %s %d %d", where, i, d, dr.FromDate(), dw.calls, dw.errors)
				}
				pctl(t, where+" "+d.Date+" p95", dw.durations, 0.95, d.P95Ms)
			}
			// Error types: count, message of the latest error.
			type et struct {
				n    int64
				last time.Time
				msg  string
			}
			types := map[string]*et{}
			clientCalls := map[string]int64{}
			for _, it := range items {
				clientCalls[it.ClientName]++
				if it.Status != analytics.StatusError {
					continue
				}
				e := types[it.ErrorType]
				if e == nil {
					e = &et{}
					types[it.ErrorType] = e
				}
				e.n++
				if it.Timestamp.After(e.last) {
					e.last, e.msg = it.Timestamp, it.ErrorMessage
				}
			}
			if got.ErrorTypes == nil || got.Clients == nil || len(got.ErrorTypes) != len(types) || len(got.Clients) != len(clientCalls) {
				t.Fatalf("%s: error types %+v clients %+v, want %d and %d", where, got.ErrorTypes, got.Clients, len(types), len(clientCalls))
			}
			for i, e := range got.ErrorTypes {
				w := types[e.ErrorType]
				if w == nil || e.Count != w.n || e.LastMessage != w.msg {
					t.Errorf("%s: error type %+v, want %+v", where, e, w)
				}
				if i > 0 && got.ErrorTypes[i-1].Count < e.Count {
					t.Errorf("%s: error types not by count", where)
				}
			}
			for i, c := range got.Clients {
				if c.Calls != clientCalls[c.ClientName] {
					t.Errorf("%s: client %+v, want %d calls", where, c, clientCalls[c.ClientName])
				}
				if i > 0 && got.Clients[i-1].Calls < c.Calls {
					t.Errorf("%s: clients not by calls", where)
				}
			}
		}
	}
	// The literal shape of a tool with a known error history.
	sd, _ := db.Tool(ctx, mcpA, "search_docs", week)
	if len(sd.ErrorTypes) != 1 || sd.ErrorTypes[0] != (analytics.ErrorTypeCount{ErrorType: "TimeoutError", Count: 5, LastMessage: lastTimeout()}) {
		t.Errorf("search_docs error types = %+v", sd.ErrorTypes)
	}
	if sd.Calls != 100 || *sd.AvgMs != 50.5 {
		t.Errorf("search_docs = %d calls, avg %v", sd.Calls, *sd.AvgMs)
	}
	// A clear distribution: durations 1..100 ms.
	within(t, "search_docs p50", *sd.P50Ms, 49, 52)
	within(t, "search_docs p95", *sd.P95Ms, 94, 96.5)
	within(t, "search_docs p99", *sd.P99Ms, 98, 100)
	uni, _ := db.Tool(ctx, mcpA, unicode, week)
	if uni.Calls != 12 || uni.P95Ms != nil || len(uni.ErrorTypes) != 1 || uni.ErrorTypes[0].ErrorType != "" || uni.ErrorTypes[0].Count != 3 {
		t.Errorf("unicode tool = %+v", uni)
	}
	none, _ := db.Tool(ctx, mcpA, "no-such-tool", week)
	j, _ := json.Marshal(none)
	if !jsonHas(j, `"calls":0`, `"p99_ms":null`, `"error_types":[]`, `"clients":[]`) || len(none.Series) != 7 {
		t.Errorf("unknown tool: %s", j)
	}
}

// lastTimeout is the message of the latest TimeoutError of search_docs.
func lastTimeout() string {
	var last time.Time
	var msg string
	for _, s := range fixtureItems() {
		if s.mcp == mcpA && s.errType == "TimeoutError" && s.ts.After(last) {
			last, msg = s.ts, s.errMsg
		}
	}
	return msg
}

func testUsage(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	names := []analytics.MCPName{{ID: mcpB, Name: "B"}, {ID: "mcp-empty", Name: "Empty"}}
	got, err := db.Usage(ctx, acct1, week, names)
	if err != nil {
		t.Fatal(err)
	}
	byDay, byMCP := map[string]int64{}, map[string]int64{}
	var total int64
	for _, row := range o.rows {
		if row.AccountID != acct1 || row.ReceivedAt.Before(week.From) || !row.ReceivedAt.Before(week.End()) {
			continue
		}
		byDay[dayOf(row.ReceivedAt)]++
		byMCP[row.MCPID]++
		total++
	}
	eq(t, "usage events", got.Events, total)
	for i, d := range got.Days {
		if d.Date != week.Days()[i] || d.Events != byDay[d.Date] {
			t.Errorf("usage day %+v, want %d", d, byDay[d.Date])
		}
	}
	// mcp-a is not named (deleted since): listed with a null name.
	want := []analytics.UsageMCP{
		{MCPID: mcpA, Events: byMCP[mcpA]},
		{MCPID: mcpB, Name: strp("B"), Events: byMCP[mcpB]},
		{MCPID: "mcp-empty", Name: strp("Empty"), Events: 0},
	}
	gj, _ := json.Marshal(got.MCPs)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("usage mcps = %s, want %s", gj, wj)
	}
	// The late old_tool items count on the day they were accepted (03-01).
	if got.Days[0].Events != byDay["2026-03-01"] || byDay["2026-03-01"] < 4 {
		t.Errorf("03-01 usage = %d", got.Days[0].Events)
	}
	other, _ := db.Usage(ctx, acct2, week, nil)
	if other.Events != 5 || len(other.MCPs) != 1 || other.MCPs[0].MCPID != mcpC {
		t.Errorf("acct-2 usage = %+v", other)
	}
}

func testWindowStats(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	windows := [][2]time.Time{
		{day0.AddDate(0, 0, 1), day0.AddDate(0, 0, 1).Add(12 * time.Hour)},
		{day0.AddDate(0, 0, 3).Add(-time.Millisecond), day0.AddDate(0, 0, 3)}, // one millisecond: only 23:59:59.999
		{day0.Add(-24 * time.Hour), day0.AddDate(0, 0, 8)},
	}
	for _, w := range windows {
		got, err := db.WindowStats(ctx, w[0], w[1], []string{mcpA, mcpB, "mcp-none"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[string][]analytics.Item{}
		for _, row := range o.rows {
			ts := row.Item.Timestamp
			if (row.MCPID != mcpA && row.MCPID != mcpB) || ts.Before(w[0]) || !ts.Before(w[1]) {
				continue
			}
			if want[row.MCPID] == nil {
				want[row.MCPID] = map[string][]analytics.Item{}
			}
			want[row.MCPID][""] = append(want[row.MCPID][""], row.Item)
			if isTool(row.Item) {
				want[row.MCPID][row.Item.Name] = append(want[row.MCPID][row.Item.Name], row.Item)
			}
		}
		if len(got) != len(want) {
			t.Errorf("window %v: %d MCPs, want %d", w, len(got), len(want))
		}
		for mcp, keys := range want {
			if len(got[mcp]) != len(keys) {
				t.Errorf("window %v %s: keys %v, want %d", w, mcp, got[mcp], len(keys))
			}
			for key, items := range keys {
				a := aggregate(items)
				g, ok := got[mcp][key]
				if !ok || g.Calls != a.calls || g.Errors != a.errors {
					t.Errorf("window %v %s %q: %+v, want %d calls %d errors", w, mcp, key, g, a.calls, a.errors)
				}
				pctl(t, "window p50 "+mcp+" "+key, a.durations, 0.5, g.P50Ms)
				pctl(t, "window p95 "+mcp+" "+key, a.durations, 0.95, g.P95Ms)
				pctl(t, "window p99 "+mcp+" "+key, a.durations, 0.99, g.P99Ms)
				if g.Sessions != a.sessions || g.Users != a.users {
					t.Errorf("window %v %s %q: %d sessions %d users, want %d and %d (exact)", w, mcp, key, g.Sessions, g.Users, a.sessions, a.users)
				}
			}
		}
	}
	one, _ := db.WindowStats(ctx, windows[1][0], windows[1][1], []string{mcpA})
	if one[mcpA][""].Calls != 1 || one[mcpA]["edge"].Calls != 1 || *one[mcpA]["edge"].P95Ms != 5 {
		t.Errorf("1 ms window = %+v", one)
	}
	empty, err := db.WindowStats(ctx, windows[0][0], windows[0][1], nil)
	if err != nil || len(empty) != 0 {
		t.Errorf("no MCPs: %v %v", empty, err)
	}
}

// testWindowSets checks the one-scan read of many windows against the
// oracle: every window of every MCP, counts exact, p95 only where asked.
func testWindowSets(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	to := day0.AddDate(0, 0, 3) // the windows end at the fixture's 1 ms edge
	reqs := map[string]analytics.WindowRequest{
		mcpA:       {Minutes: []int{1, 60, 720, 1440}, DetailMinutes: []int{60, 1440}},
		mcpB:       {Minutes: []int{5, 1440}},
		"mcp-none": {Minutes: []int{30}, DetailMinutes: []int{30}},
	}
	got, err := db.WindowSets(ctx, to, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for mcp, req := range reqs {
		for _, w := range req.Minutes {
			from := to.Add(-time.Duration(w) * time.Minute)
			keys := o.windowKeys(mcp, from, to)
			if len(got[mcp][w]) != len(keys) {
				t.Errorf("%s %d min: keys %v, want %d", mcp, w, got[mcp][w], len(keys))
			}
			wantP95 := false
			for _, pw := range req.DetailMinutes {
				wantP95 = wantP95 || pw == w
			}
			for key, items := range keys {
				a := aggregate(items)
				g := got[mcp][w][key]
				if g.Calls != a.calls || g.Errors != a.errors {
					t.Errorf("%s %d min %q: %+v, want %d calls %d errors", mcp, w, key, g, a.calls, a.errors)
				}
				if wantP95 {
					pctl(t, fmt.Sprintf("window set p50 %s %d %s", mcp, w, key), a.durations, 0.5, g.P50Ms)
					pctl(t, fmt.Sprintf("window set p95 %s %d %s", mcp, w, key), a.durations, 0.95, g.P95Ms)
					pctl(t, fmt.Sprintf("window set p99 %s %d %s", mcp, w, key), a.durations, 0.99, g.P99Ms)
					if g.Sessions != a.sessions || g.Users != a.users {
						t.Errorf("%s %d min %q: %d sessions %d users, want %d and %d (exact)", mcp, w, key, g.Sessions, g.Users, a.sessions, a.users)
					}
				} else if g.P95Ms != nil || g.Sessions != 0 {
					t.Errorf("%s %d min %q: details %+v not asked for", mcp, w, key, g)
				}
			}
		}
	}
	if got[mcpA][1][""].Calls != 1 || got[mcpA][1]["edge"].Calls != 1 {
		t.Errorf("1-minute window = %+v", got[mcpA][1])
	}
}

// testWindowSetsRandom checks the banded read against the plain aggregate
// over events (WindowStats) for random window ends (to the millisecond),
// lengths, detail windows and detail keys: the same keys, calls, errors,
// sessions and users, percentiles exactly where asked and within the
// t-digest accuracy of the oracle's durations.
func testWindowSetsRandom(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(29, 3))
	mcps := []string{mcpA, mcpB, mcpC}
	keysOf := []string{"", "edge", "search", unicode}
	for c := 0; c < 12; c++ {
		to := day0.Add(time.Duration(rnd.Int64N(int64(8*24*time.Hour/time.Millisecond))) * time.Millisecond)
		reqs := map[string]analytics.WindowRequest{}
		for _, mcp := range mcps[:1+rnd.IntN(len(mcps))] {
			var r analytics.WindowRequest
			for range 1 + rnd.IntN(4) {
				w := 1 + rnd.IntN(1440)
				r.Minutes = append(r.Minutes, w)
				if rnd.IntN(2) == 0 {
					r.DetailMinutes = append(r.DetailMinutes, w)
				}
			}
			if rnd.IntN(3) > 0 {
				r.DetailKeys = []string{keysOf[rnd.IntN(len(keysOf))]}
			}
			reqs[mcp] = r
		}
		got, err := db.WindowSets(ctx, to, reqs)
		if err != nil {
			t.Fatal(err)
		}
		// A batch (the evaluator's current and week-ago reads, the
		// week-ago one for some of the MCPs and windows, each read's
		// statements run at once) answers each read as WindowSets does;
		// so does one whose reads overlap (every other case).
		weekAgo := to.Add(-7 * 24 * time.Hour)
		base := map[string]analytics.WindowRequest{}
		for mcp, r := range reqs {
			if rnd.IntN(3) > 0 {
				r.Minutes = r.Minutes[:1+rnd.IntN(len(r.Minutes))]
				base[mcp] = r
			}
		}
		batchReads := []analytics.WindowRead{{To: weekAgo, Reqs: base}, {To: to, Reqs: reqs}}
		if c%2 == 1 {
			batchReads = append(batchReads, analytics.WindowRead{To: to.Add(-30 * time.Minute), Reqs: reqs})
		}
		batch, err := db.WindowSetsBatch(ctx, batchReads)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range batchReads {
			alone, err := db.WindowSets(ctx, r.To, r.Reqs)
			if err != nil {
				t.Fatal(err)
			}
			sameSets(t, fmt.Sprintf("case %d batch, read %d", c, i), batch[i], alone)
		}
		sameSets(t, fmt.Sprintf("case %d batch", c), batch[1], got)
		for mcp, r := range reqs {
			for _, w := range r.Minutes {
				from := to.Add(-time.Duration(w) * time.Minute)
				plain, err := db.WindowStats(ctx, from, to, []string{mcp})
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("case %d %s %d min to %s", c, mcp, w, to.Format(time.RFC3339Nano))
				if len(got[mcp][w]) != len(plain[mcp]) {
					t.Errorf("%s: keys %v, want %v", what, got[mcp][w], plain[mcp])
				}
				detail := slices.Contains(r.DetailMinutes, w)
				for key, p := range plain[mcp] {
					g := got[mcp][w][key]
					if g.Calls != p.Calls || g.Errors != p.Errors {
						t.Errorf("%s %q: %d calls %d errors, want %d and %d", what, key, g.Calls, g.Errors, p.Calls, p.Errors)
					}
					if !detail || (r.DetailKeys != nil && !slices.Contains(r.DetailKeys, key)) {
						if g.P95Ms != nil || g.Sessions != 0 || g.Users != 0 {
							t.Errorf("%s %q: details %+v not asked for", what, key, g)
						}
						continue
					}
					if g.Sessions != p.Sessions || g.Users != p.Users || (g.P95Ms == nil) != (p.P95Ms == nil) {
						t.Errorf("%s %q: %+v, want %+v", what, key, g, p)
					}
					var items []analytics.Item
					for _, row := range o.rows {
						ts := row.Item.Timestamp
						if row.MCPID == mcp && !ts.Before(from) && ts.Before(to) && (key == "" || isTool(row.Item) && row.Item.Name == key) {
							items = append(items, row.Item)
						}
					}
					a := aggregate(items)
					pctl(t, what+" p95 "+key, a.durations, 0.95, g.P95Ms)
				}
			}
		}
	}
}

// testWindowSetsBatchFails checks that a batch whose statements run at
// once fails whole when one of them fails: the counts of the week-ago
// read, or the details of the current one, fail (a window so long that
// its band lookup exceeds the server's max_query_size) while the other
// statements succeed, and the batch returns the error and no answer.
func testWindowSetsBatchFails(t *testing.T, db *clickhouse.DB) {
	ctx := context.Background()
	to := day0.AddDate(0, 0, 3)
	good := map[string]analytics.WindowRequest{mcpA: {Minutes: []int{5, 60, 1440}, DetailMinutes: []int{60}}, mcpB: {Minutes: []int{15}}}
	if got, err := db.WindowSetsBatch(ctx, []analytics.WindowRead{{To: to, Reqs: good}, {To: to.Add(-7 * 24 * time.Hour), Reqs: good}}); err != nil || len(got) != 2 || len(got[0][mcpA]) == 0 {
		t.Fatalf("good batch: %v, %v", got, err)
	}
	const tooLong = 200000 // minutes: a lookup array of 200k elements, over 256 KiB of text
	badCounts := map[string]analytics.WindowRequest{mcpA: {Minutes: []int{5, tooLong}}}
	badDetails := map[string]analytics.WindowRequest{mcpA: {Minutes: []int{5}, DetailMinutes: []int{tooLong}}}
	for name, reads := range map[string][]analytics.WindowRead{
		"week-ago counts": {{To: to, Reqs: good}, {To: to.Add(-7 * 24 * time.Hour), Reqs: badCounts}},
		"current counts":  {{To: to, Reqs: badCounts}, {To: to.Add(-7 * 24 * time.Hour), Reqs: good}},
		"current details": {{To: to, Reqs: badDetails}, {To: to.Add(-7 * 24 * time.Hour), Reqs: good}},
	} {
		got, err := db.WindowSetsBatch(ctx, reads)
		if err == nil || got != nil {
			t.Errorf("%s failing: %v, %v; want an error and no answer", name, got, err)
		}
	}
}

// testWindowSetsRedial checks that the window counts, read on
// connections of their own kept idle between passes, are read again in
// full when the server dropped those connections while idle, and that a
// cancelled read answers the context's error.
func testWindowSetsRedial(t *testing.T, db *clickhouse.DB) {
	ctx := context.Background()
	to := day0.AddDate(0, 0, 3)
	reqs := map[string]analytics.WindowRequest{mcpA: {Minutes: []int{5, 60, 1440}}, mcpB: {Minutes: []int{15, 1440}}}
	reads := []analytics.WindowRead{{To: to, Reqs: reqs}, {To: to.Add(-24 * time.Hour), Reqs: reqs}}
	want, err := db.WindowSetsBatch(ctx, reads)
	if err != nil || len(want[0][mcpA]) == 0 {
		t.Fatalf("first read: %v, %v", want, err)
	}
	if n := db.BreakIdleReads(); n == 0 {
		t.Fatal("no idle read connection after a read")
	}
	got, err := db.WindowSetsBatch(ctx, reads)
	if err != nil {
		t.Fatalf("read over dropped connections: %v", err)
	}
	for i := range reads {
		sameSets(t, fmt.Sprint("read ", i), got[i], want[i])
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.WindowSetsBatch(cancelled, reads); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
}

// sameSets compares two WindowSets answers: the same MCPs, windows and
// keys, the same counts, percentiles where the other has them.
func sameSets(t *testing.T, what string, got, want map[string]map[int]map[string]analytics.WindowStat) {
	t.Helper()
	n := 0
	for mcp, ws := range want {
		for w, keys := range ws {
			for key, s := range keys {
				n++
				g, ok := got[mcp][w][key]
				if !ok || g.Calls != s.Calls || g.Errors != s.Errors || g.Sessions != s.Sessions || g.Users != s.Users || (g.P95Ms == nil) != (s.P95Ms == nil) {
					t.Errorf("%s: %s %d %q = %+v, want %+v", what, mcp, w, key, g, s)
				}
			}
		}
	}
	for _, ws := range got {
		for _, keys := range ws {
			n -= len(keys)
		}
	}
	if n != 0 {
		t.Errorf("%s: %d entries more or less than %v", what, n, want)
	}
}

// ---- helpers ----

func eq(t *testing.T, what string, got, want int64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// hllExact is the largest distinct count uniqHLL12 returns exactly: a
// state keeps up to 16 values in an exact small set (checked on 18.16 for
// 2,000 random sets of each size 1..40, merged from 5 partial states:
// every size up to 16 exact, from 17 on a few off by 1 to 3).
const hllExact = 16

// hllTolerance is the error allowed on a uniqHLL12 count whose true value
// is want: none up to hllExact; beyond, three standard errors (1.6% each)
// plus 2, for the small counts just past the exact set, where one hash
// collision is already a few percent.
func hllTolerance(want int64) float64 {
	if want <= hllExact {
		return 0
	}
	return 2 + 0.048*float64(want)
}

// distinct compares a rollup's distinct count (sessions, users) with the
// oracle's exact one: equal up to hllExact, within hllTolerance beyond.
func distinct(t *testing.T, what string, got, want int64) {
	t.Helper()
	if math.Abs(float64(got-want)) > hllTolerance(want) {
		t.Errorf("%s = %d, want %d (uniqHLL12: exact up to %d, within %.1f here)", what, got, want, hllExact, hllTolerance(want))
	}
}

func eqF(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func eqPtr(t *testing.T, what string, got, want *float64) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %v, want %v", what, fmtPtr(got), fmtPtr(want))
	default:
		eqF(t, what, *got, *want)
	}
}

func pctl(t *testing.T, what string, sorted []float64, q float64, got *float64) {
	t.Helper()
	if !percentileOK(sorted, q, got) {
		t.Errorf("%s = %v, not within the t-digest accuracy of %v (n=%d)", what, fmtPtr(got), sorted, len(sorted))
	}
}

func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want within [%v, %v]", what, got, lo, hi)
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

func strp(s string) *string { return &s }

func jsonHas(j []byte, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(string(j), p) {
			return false
		}
	}
	return true
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if telemetry.ErrorCode(err) != code {
		t.Errorf("error %v: code %q, want %q", err, telemetry.ErrorCode(err), code)
	}
}
