package clickhouse_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// failureRows is one MCP's day of calls with the failure fields: session
// s1 calls search three times with the same arguments (two repeats), then
// once with others, then fetch with the first arguments (no repeat: another
// tool); s2 asks for get_forcast (unknown_tool) twice from two clients and
// refuses search's arguments twice with one message and once with another.
func failureRows(mcp string, at time.Time) []analytics.StoredRow {
	size := func(n int64) *int64 { return &n }
	var rows []analytics.StoredRow
	add := func(dt time.Duration, session, name, kind, msg, hash, client string, resp *int64) {
		it := analytics.Item{Timestamp: at.Add(dt), SessionID: session, Method: analytics.MethodToolsCall, Name: name,
			ErrorKind: kind, ErrorMessage: msg, ArgsHash: hash, ClientName: client, ResponseBytes: resp}
		it.Normalize()
		rows = append(rows, analytics.StoredRow{AccountID: acct1, MCPID: mcp, Node: "node-f", Seq: uint64(len(rows) + 1),
			ReceivedAt: at.Add(time.Hour), Item: it})
	}
	add(1*time.Second, "s1", "search", "", "", "h1", "cursor", size(100))
	add(2*time.Second, "s1", "search", "", "", "h1", "cursor", size(200))
	add(3*time.Second, "s1", "search", "", "", "h1", "cursor", size(300))
	add(4*time.Second, "s1", "search", "", "", "h2", "cursor", size(102400))
	add(5*time.Second, "s1", "fetch", "", "", "h2", "cursor", nil)
	add(6*time.Second, "s2", "get_forcast", analytics.ErrorKindUnknownTool, "Tool get_forcast not found", "h3", "claude", nil)
	add(7*time.Second, "s3", "get_forcast", analytics.ErrorKindUnknownTool, "Tool get_forcast not found", "h3", "cursor", nil)
	add(8*time.Second, "s3", "get_forcast", analytics.ErrorKindUnknownTool, "Tool get_forcast not found", "h3", "cursor", nil)
	add(9*time.Second, "s2", "search", analytics.ErrorKindInvalidParams, "query: must be a string", "h4", "claude", nil)
	add(10*time.Second, "s2", "search", analytics.ErrorKindInvalidParams, "query: must be a string", "h5", "claude", nil)
	add(11*time.Second, "s2", "search", analytics.ErrorKindInvalidParams, "limit: must be <= 50", "h6", "claude", nil)
	return rows
}

func TestFailureReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t, true)
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	if err := db.InsertRows(ctx, failureRows(mcpA, at)); err != nil {
		t.Fatal(err)
	}
	r := analytics.NewRange(at, at)
	i64 := func(n int64) *int64 { return &n }
	val := func(p *int64) int64 { // -1 for null
		if p == nil {
			return -1
		}
		return *p
	}

	tool, err := db.Tool(ctx, mcpA, "search", r)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds := []analytics.ErrorKindCount{{ErrorKind: analytics.ErrorKindInvalidParams, Count: 3}}
	if !reflect.DeepEqual(tool.ErrorKinds, wantKinds) {
		t.Errorf("tool error kinds %+v, want %+v", tool.ErrorKinds, wantKinds)
	}
	wantRefusals := []analytics.Refusal{{Message: "query: must be a string", Count: 2}, {Message: "limit: must be <= 50", Count: 1}}
	if !reflect.DeepEqual(tool.Refusals, wantRefusals) {
		t.Errorf("refusals %+v, want %+v", tool.Refusals, wantRefusals)
	}
	if val(tool.RepeatedCalls) != 2 {
		t.Errorf("tool repeated_calls %d, want 2", val(tool.RepeatedCalls))
	}
	if tool.Max == nil || *tool.Max != 102400 || tool.P50 == nil || tool.P95 == nil || *tool.P50 < 100 || *tool.P50 > 300 || *tool.P95 < 300 {
		t.Errorf("tool sizes p50 %v p95 %v max %v, want max 102400, p50 in the middle sizes", tool.P50, tool.P95, tool.Max)
	}

	list, err := db.Tools(ctx, mcpA, r)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]analytics.ToolSummary{}
	for _, it := range list.Items {
		got[it.Name] = it
	}
	if s := got["search"]; val(s.RepeatedCalls) != 2 || s.Max == nil || *s.Max != 102400 {
		t.Errorf("tools: search repeated %d max %v", val(s.RepeatedCalls), s.Max)
	}
	if f := got["fetch"]; val(f.RepeatedCalls) != 0 || f.Max != nil || f.P50 != nil {
		t.Errorf("tools: fetch repeated %d sizes %v %v, want 0 and null sizes", val(f.RepeatedCalls), f.P50, f.Max)
	}
	if g := got["get_forcast"]; val(g.RepeatedCalls) != 1 {
		t.Errorf("tools: get_forcast repeated %d, want 1 (s3 asked twice in a row)", val(g.RepeatedCalls))
	}

	o, err := db.Overview(ctx, mcpA, r)
	if err != nil {
		t.Fatal(err)
	}
	wantAll := []analytics.ErrorKindCount{{ErrorKind: analytics.ErrorKindInvalidParams, Count: 3}, {ErrorKind: analytics.ErrorKindUnknownTool, Count: 3}}
	if !reflect.DeepEqual(o.ErrorKinds, wantAll) || val(o.RepeatedCalls) != 3 {
		t.Errorf("overview kinds %+v repeated %d, want %+v and 3", o.ErrorKinds, val(o.RepeatedCalls), wantAll)
	}

	unknown, err := db.UnknownTools(ctx, mcpA, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantUnknown := []analytics.UnknownTool{{Name: "get_forcast", Calls: 3, Sessions: 2, LastSeenAt: at.Add(8 * time.Second),
		Clients: []analytics.ToolClient{{ClientName: "cursor", Calls: 2}, {ClientName: "claude", Calls: 1}}}}
	if !reflect.DeepEqual(unknown, wantUnknown) {
		t.Errorf("unknown tools %+v, want %+v", unknown, wantUnknown)
	}
	// With an inventory listing search only, fetch is unknown too.
	unknown, err = db.UnknownTools(ctx, mcpA, r, []string{"search"})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 2 || unknown[1].Name != "fetch" || unknown[1].Calls != 1 {
		t.Errorf("unknown tools with an inventory: %+v", unknown)
	}

	// A rule window's counts: the same rule over [from, to).
	for _, c := range []struct {
		listed []string
		to     time.Duration
		want   map[string]int64
	}{
		{nil, time.Minute, map[string]int64{"": 3, "get_forcast": 3}},
		{[]string{"search"}, time.Minute, map[string]int64{"": 4, "get_forcast": 3, "fetch": 1}},
		{[]string{"search"}, 7 * time.Second, map[string]int64{"": 2, "get_forcast": 1, "fetch": 1}},
		{[]string{"search"}, time.Second, map[string]int64{}},
	} {
		counts, err := db.UnknownCallCounts(ctx, mcpA, at, at.Add(c.to), c.listed)
		if err != nil || !reflect.DeepEqual(counts, c.want) {
			t.Errorf("unknown call counts %v until +%v: %v %v, want %v", c.listed, c.to, counts, err, c.want)
		}
	}

	bd, err := db.Breakdown(ctx, mcpA, r, analytics.BreakdownQuery{By: analytics.ByErrorKind, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(bd.Items) != 2 || bd.Items[0].Calls != 3 || bd.Items[1].Calls != 3 {
		t.Errorf("breakdown by error_kind %+v", bd.Items)
	}

	// The timeline numbers repeats, across pages too.
	for _, limit := range []int{100, 2, 1} {
		var reps []int
		var sizes []*int64
		cursor := ""
		for {
			tl, err := db.SessionTimeline(ctx, mcpA, "s1", analytics.TimeWindow{}, limit, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range tl.Items {
				reps = append(reps, it.Repeat)
				sizes = append(sizes, it.ResponseBytes)
			}
			if tl.NextCursor == nil {
				break
			}
			cursor = *tl.NextCursor
		}
		if want := []int{0, 1, 2, 0, 0}; !reflect.DeepEqual(reps, want) {
			t.Errorf("limit %d: timeline repeats %v, want %v", limit, reps, want)
		}
		if want := []*int64{i64(100), i64(200), i64(300), i64(102400), nil}; !reflect.DeepEqual(sizes, want) {
			t.Errorf("limit %d: timeline sizes %v", limit, sizes)
		}
	}
	tl, err := db.SessionTimeline(ctx, mcpA, "s2", analytics.TimeWindow{}, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if k := tl.Items[0].ErrorKind; k == nil || *k != analytics.ErrorKindUnknownTool || tl.Items[0].Status != analytics.StatusError {
		t.Errorf("timeline error kind %v status %s", k, tl.Items[0].Status)
	}

	// Past the raw budget, the repeats are null and the unknown tools
	// refused; the rollup figures are still there.
	db.SetRawBreakdownRows(5)
	if o, err := db.Overview(ctx, mcpA, r); err != nil || o.RepeatedCalls != nil || o.Calls != 11 {
		t.Errorf("overview past the budget: %v, repeated %v, calls %d", err, o.RepeatedCalls, o.Calls)
	}
	if tool, err := db.Tool(ctx, mcpA, "search", r); err != nil || tool.RepeatedCalls != nil {
		t.Errorf("tool past the budget: %v, repeated %v", err, tool.RepeatedCalls)
	}
	if list, err := db.Tools(ctx, mcpA, r); err != nil || len(list.Items) != 3 || list.Items[0].RepeatedCalls != nil {
		t.Errorf("tools past the budget: %v %+v", err, list)
	}
	_, err = db.UnknownTools(ctx, mcpA, r, nil)
	if !errors.Is(err, analytics.ErrTooManyEvents) || telemetry.ErrorCode(err) != telemetry.ERANGETOOLARGE {
		t.Errorf("unknown tools past the budget: %v", err)
	}
}
