package clickhouse_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// releaseRows is one MCP's two releases: 1.0.0 from 08:00:10 to 12:30
// (search 120 calls, 6 tool_error; fetch 110 calls, none failing; one
// initialize), then 1.1.0 from 13:00:05 (search 150 calls, 30 timeout
// errors; no fetch; a new tool export, 3 calls) on the same day, and items
// without server_version (not a release).
func releaseRows(mcp string, day time.Time) []analytics.StoredRow {
	var rows []analytics.StoredRow
	add := func(at time.Time, version, method, name, kind string, ms float64) {
		d := ms
		it := analytics.Item{Timestamp: at, SessionID: "s", Method: method, Name: name, ServerVersion: version, ErrorKind: kind, DurationMs: &d}
		it.Normalize()
		rows = append(rows, analytics.StoredRow{AccountID: acct1, MCPID: mcp, Node: "node-r", Seq: uint64(len(rows) + 1),
			ReceivedAt: at, Item: it})
	}
	v1 := day.Add(8*time.Hour + 10*time.Second)
	add(v1, "1.0.0", "initialize", "", "", 1)
	for i := range 120 {
		kind := ""
		if i%20 == 0 {
			kind = analytics.ErrorKindToolError
		}
		add(v1.Add(time.Duration(i)*time.Minute), "1.0.0", analytics.MethodToolsCall, "search", kind, 10)
	}
	for i := range 110 {
		add(v1.Add(time.Duration(i)*2*time.Minute), "1.0.0", analytics.MethodToolsCall, "fetch", "", 20)
	}
	add(day.Add(12*time.Hour+30*time.Minute), "1.0.0", analytics.MethodToolsCall, "fetch", "", 20)
	v2 := day.Add(13*time.Hour + 5*time.Second)
	for i := range 150 {
		kind := ""
		if i%5 == 0 {
			kind = analytics.ErrorKindTimeout
		}
		add(v2.Add(time.Duration(i)*time.Minute), "1.1.0", analytics.MethodToolsCall, "search", kind, 10)
	}
	for i := range 3 {
		add(v2.Add(time.Duration(i)*time.Minute), "1.1.0", analytics.MethodToolsCall, "export", "", 5)
	}
	add(v2, "", analytics.MethodToolsCall, "search", "", 10)
	return rows
}

func TestReleaseReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t, true)
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if err := db.InsertRows(ctx, releaseRows(mcpA, day)); err != nil {
		t.Fatal(err)
	}
	spans, err := db.ReleaseSpans(ctx, mcpA)
	if err != nil {
		t.Fatal(err)
	}
	want := []analytics.ReleaseSpan{
		{ServerVersion: "1.1.0", FirstSeen: day.Add(13*time.Hour + 5*time.Second), LastSeen: day.Add(13*time.Hour + 149*time.Minute + 5*time.Second)},
		{ServerVersion: "1.0.0", FirstSeen: day.Add(8*time.Hour + 10*time.Second), LastSeen: day.Add(12*time.Hour + 30*time.Minute)},
	}
	if !reflect.DeepEqual(spans, want) {
		t.Fatalf("spans %+v, want %+v", spans, want)
	}

	list, err := db.Releases(ctx, mcpA, analytics.NewRange(day, day))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ServerVersion != "1.1.0" || list[0].Calls != 153 || list[0].Errors != 30 ||
		list[1].Calls != 232 || list[1].Errors != 6 {
		t.Fatalf("releases %+v", list)
	}
	if !reflect.DeepEqual(list[0].ErrorKinds, []analytics.ErrorKindCount{{ErrorKind: analytics.ErrorKindTimeout, Count: 30}}) ||
		list[1].P95Ms == nil || *list[1].P95Ms < 10 || *list[1].P95Ms > 20 {
		t.Errorf("release kinds %+v p95 %v", list[0].ErrorKinds, list[1].P95Ms)
	}
	if none, err := db.Releases(ctx, mcpA, analytics.NewRange(day.AddDate(0, 0, 1), day.AddDate(0, 0, 1))); err != nil || len(none) != 0 {
		t.Errorf("a day without items: %+v %v", none, err)
	}

	// The matched windows: the head's first 24 hours from 13:00, the base's
	// last 24 hours ending at 13:00 (its last item was at 12:30).
	bf, bt, hf, ht := analytics.MatchedWindows(spans[1], spans[0])
	if !bt.Equal(day.Add(13*time.Hour)) || !hf.Equal(bt) || !ht.Equal(hf.Add(24*time.Hour)) || !bf.Equal(bt.Add(-24*time.Hour)) {
		t.Fatalf("windows %v %v %v %v", bf, bt, hf, ht)
	}
	bw, err := db.ReleaseWindow(ctx, mcpA, "1.0.0", bf, bt)
	if err != nil {
		t.Fatal(err)
	}
	if bw.Total.Calls != 232 || bw.Total.Errors != 6 || bw.Total.Durations != 232 || len(bw.Tools) != 2 ||
		bw.Tools["search"].Calls != 120 || bw.Tools["search"].Errors != 6 || bw.Tools["fetch"].Calls != 111 ||
		bw.Tools["search"].ErrorKinds[analytics.ErrorKindToolError] != 6 || bw.Total.ErrorKinds[analytics.ErrorKindToolError] != 6 {
		t.Fatalf("base window %+v", bw)
	}
	// Only the hours asked: 08:00 to 10:00 holds all of search's
	// 120 (08:00:10 + 0..119 min) and fetch's first 60 (every 2 min).
	part, err := db.ReleaseWindow(ctx, mcpA, "1.0.0", day.Add(8*time.Hour), day.Add(10*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if part.Tools["search"].Calls != 120 || part.Tools["fetch"].Calls != 60 || part.Total.Calls != 181 {
		t.Errorf("two hours: search %d fetch %d total %d", part.Tools["search"].Calls, part.Tools["fetch"].Calls, part.Total.Calls)
	}
	hw, err := db.ReleaseWindow(ctx, mcpA, "1.1.0", hf, ht)
	if err != nil {
		t.Fatal(err)
	}
	c := analytics.CompareReleases(mcpA, analytics.ReleaseSide{ServerVersion: "1.0.0"}, analytics.ReleaseSide{ServerVersion: "1.1.0"}, bw, hw)
	if c.Verdict != analytics.VerdictWorse || c.Head.Calls != 153 || c.Base.Calls != 232 {
		t.Fatalf("comparison %+v", c)
	}
	got := map[string]string{}
	for _, tc := range c.Tools {
		got[tc.Name] = tc.Verdict
	}
	if !reflect.DeepEqual(got, map[string]string{"search": "worse", "fetch": "worse", "export": "same"}) {
		t.Errorf("tool verdicts %v", got)
	}
	codes := map[string]bool{}
	for _, r := range c.Reasons {
		codes[r.Code+"/"+r.Tool] = true
	}
	for _, k := range []string{"error_rate_up/", "error_rate_up/search", "new_error_kind/search", "tool_disappeared/fetch"} {
		if !codes[k] {
			t.Errorf("reason %s missing from %+v", k, c.Reasons)
		}
	}

	cmp := analytics.ReleaseComparer{Reader: db}
	stats, err := cmp.PreviousReleaseStats(ctx, mcpA)
	if err != nil {
		t.Fatal(err)
	}
	if stats[""].Calls != 232 || stats["search"].Errors != 6 {
		t.Errorf("previous release stats %+v", stats)
	}
	v, err := cmp.Verdict(ctx, mcpA, "1.1.0")
	if err != nil || v.Verdict != analytics.VerdictFail || v.ComparedWith == nil || *v.ComparedWith != "1.0.0" {
		t.Errorf("verdict %+v %v", v, err)
	}
	if v, err := cmp.Verdict(ctx, mcpA, "1.0.0"); err != nil || v.Verdict != analytics.VerdictPass || v.ComparedWith != nil {
		t.Errorf("first release's verdict %+v %v", v, err)
	}
}
