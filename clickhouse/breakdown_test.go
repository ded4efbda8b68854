package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// breakdownValue is the oracle's value of an item for a dimension, and
// whether the item counts in it at all (tool: tools/call only; error_type:
// errors only).
func breakdownValue(q analytics.BreakdownQuery, it analytics.Item) (string, bool) {
	switch q.By {
	case analytics.ByTool:
		return it.Name, it.Method == analytics.MethodToolsCall
	case analytics.ByMethod:
		return it.Method, true
	case analytics.ByClientName:
		return it.ClientName, true
	case analytics.ByClientVersion:
		return it.ClientVersion, true
	case analytics.ByServerVersion:
		return it.ServerVersion, true
	case analytics.ByProtocolVersion:
		return it.ProtocolVersion, true
	case analytics.ByErrorType:
		return it.ErrorType, it.Status == analytics.StatusError
	case analytics.ByUserID:
		return it.UserID, true
	}
	return it.Attributes[q.AttributeKey], true
}

func breakdownKeeps(q analytics.BreakdownQuery, it analytics.Item) bool {
	return (q.Tool == "" || it.Method == analytics.MethodToolsCall && it.Name == q.Tool) &&
		(q.Method == "" || it.Method == q.Method) &&
		(q.ClientName == "" || it.ClientName == q.ClientName) &&
		(q.Status == "" || it.Status == q.Status)
}

type valueAgg struct {
	value string
	agg
}

// breakdown is the expected breakdown: every value's aggregate by calls
// descending then value, and the aggregate of the values past the limit
// (nil when none).
func (o oracle) breakdown(mcp string, r analytics.Range, q analytics.BreakdownQuery) ([]valueAgg, *agg) {
	by := map[string][]analytics.Item{}
	for _, it := range o.in(mcp, r, func(it analytics.Item) bool { return breakdownKeeps(q, it) }) {
		if v, ok := breakdownValue(q, it); ok {
			by[v] = append(by[v], it)
		}
	}
	var all []valueAgg
	for v, items := range by {
		all = append(all, valueAgg{v, aggregate(items)})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].calls != all[j].calls {
			return all[i].calls > all[j].calls
		}
		return all[i].value < all[j].value
	})
	if len(all) <= q.Limit {
		return all, nil
	}
	var rest []analytics.Item
	for _, v := range all[q.Limit:] {
		rest = append(rest, by[v.value]...)
	}
	a := aggregate(rest)
	return all[:q.Limit], &a
}

func checkFigures(t *testing.T, where string, got analytics.Figures, w agg) {
	t.Helper()
	eq(t, where+" calls", got.Calls, w.calls)
	eq(t, where+" errors", got.Errors, w.errors)
	eqF(t, where+" error_rate", got.ErrorRate, analytics.ErrorRate(w.errors, w.calls))
	distinct(t, where+" sessions", got.Sessions, w.sessions)
	distinct(t, where+" users", got.Users, w.users)
	eqPtr(t, where+" avg_ms", got.AvgMs, w.avg())
	pctl(t, where+" p50", w.durations, 0.5, got.P50Ms)
	pctl(t, where+" p95", w.durations, 0.95, got.P95Ms)
}

// TestBreakdown checks every dimension, with and without filters, at
// several limits (so that other is both null and not), over short and
// long ranges (monthly and daily rollups together), before and after
// merges, against plain aggregates of the raw items. Attribute keys and
// values include quotes, backslashes, '?' and unicode.
func TestBreakdown(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	hostileKey := `k'"\?🚀`
	seq := uint64(len(rows))
	for i := 0; i < 12; i++ {
		seq++
		it := analytics.Item{Timestamp: day0.AddDate(0, 0, i%7).Add(time.Duration(i) * time.Hour), SessionID: fmt.Sprintf("h-s%d", i%3),
			Method: analytics.MethodToolsCall, Name: "hostile", DurationMs: ms(float64(3 * i)), ClientName: `c'?`, ClientVersion: `v\`,
			ServerVersion: "2.0.0", ProtocolVersion: []string{"", "2026-07-28", `p'?`}[i%3], UserID: fmt.Sprintf(`u'?%d`, i%4),
			Attributes: map[string]string{hostileKey: fmt.Sprintf(`v'?\%d`, i%5), "region": []string{"eu", "us"}[i%2]}}
		if i%4 == 0 {
			it.ErrorType = `E'"?`
		}
		it.Normalize()
		rows = append(rows, analytics.StoredRow{AccountID: acct1, MCPID: mcpA, Node: "node-1", Seq: seq, ReceivedAt: it.Timestamp, Item: it})
	}
	third := len(rows) / 3
	for _, part := range [][]analytics.StoredRow{rows[:third], rows[third : 2*third], rows[2*third:]} {
		if err := db.InsertRows(ctx, part); err != nil {
			t.Fatal(err)
		}
	}
	o := oracle{rows: rows}
	dims := []string{"tool", "method", "client_name", "client_version", "server_version", "protocol_version", "error_type", "user_id",
		"attribute:region", "attribute:" + hostileKey, "attribute:absent"}
	filters := []analytics.BreakdownQuery{{}, {Tool: "search_docs", ClientName: "cursor"}, {Method: "resources/read"},
		{Status: "error"}, {Status: "ok", ClientName: `c'?`}, {Tool: "hostile", Method: "tools/call"}, {Tool: "hostile", Method: "initialize"}}
	rs := []analytics.Range{week, analytics.NewRange(day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 2)),
		analytics.NewRange(date(2025, 10, 15), date(2026, 4, 20)), analytics.NewRange(day0.AddDate(0, 0, 100), day0.AddDate(0, 0, 101))}
	check := func(t *testing.T) {
		for _, by := range dims {
			parallel(t, by, func(t *testing.T) {
				for fi, f := range filters {
					for ri, r := range rs {
						if fi > 0 && ri > 0 {
							continue
						}
						for _, limit := range []int{2, 0} {
							q, err := analytics.ParseBreakdownQuery(by, f.Tool, f.Method, f.ClientName, f.Status, limit)
							if err != nil {
								t.Fatal(err)
							}
							where := fmt.Sprintf("%s filter %d %s..%s limit %d", by, fi, r.FromDate(), r.ToDate(), limit)
							got, err := db.Breakdown(ctx, mcpA, r, q)
							if err != nil {
								t.Fatalf("%s: %v", where, err)
							}
							want, other := o.breakdown(mcpA, r, q)
							if got.From != r.FromDate() || got.To != r.ToDate() || got.By != by || got.Items == nil {
								t.Errorf("%s: echo %+v", where, got)
							}
							if len(got.Items) != len(want) {
								t.Fatalf("%s: %d items, want %d (%+v)", where, len(got.Items), len(want), got.Items)
							}
							for i, g := range got.Items {
								if g.Value != want[i].value {
									t.Fatalf("%s: items[%d] = %q, want %q", where, i, g.Value, want[i].value)
								}
								checkFigures(t, where+" "+g.Value, g.Figures, want[i].agg)
							}
							if (got.Other == nil) != (other == nil) {
								t.Fatalf("%s: other %+v, want %+v", where, got.Other, other)
							}
							if other != nil {
								checkFigures(t, where+" other", *got.Other, *other)
							}
						}
					}
				}
			})
		}
	}
	t.Run("unmerged", check)
	for _, table := range []string{"breakdown_daily", "protocol_daily"} {
		if err := db.OptimizeFinal(ctx, table); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("merged", check)

	// Hand-checked: the week's methods of mcp-a.
	q, _ := analytics.ParseBreakdownQuery("method", "", "", "", "", 2)
	got, _ := db.Breakdown(ctx, mcpA, week, q)
	if len(got.Items) != 2 || got.Items[0].Value != "tools/call" || got.Items[0].Calls != 100+12+2+12 ||
		got.Items[1].Value != "resources/read" || got.Items[1].Calls != 10 || got.Other == nil || got.Other.Calls != 6+1 {
		t.Errorf("methods of mcp-a: %+v other %+v", got.Items, got.Other)
	}

	// The raw dimensions' row budget.
	db.SetRawBreakdownRows(10)
	for _, by := range []string{"user_id", "attribute:seq"} {
		q, _ := analytics.ParseBreakdownQuery(by, "", "", "", "", 0)
		_, err := db.Breakdown(ctx, mcpA, week, q)
		wantCode(t, err, telemetry.ERANGETOOLARGE)
		if _, err := db.Breakdown(ctx, mcpA, analytics.NewRange(day0.AddDate(0, 0, 100), day0.AddDate(0, 0, 101)), q); err != nil {
			t.Errorf("%s over an empty range: %v", by, err)
		}
	}
	q, _ = analytics.ParseBreakdownQuery("client_name", "", "", "", "error", 0)
	if _, err := db.Breakdown(ctx, mcpA, week, q); err != nil {
		t.Errorf("a rollup dimension filtered by status only is not bound by the raw budget: %v", err)
	}
	q, _ = analytics.ParseBreakdownQuery("client_name", "search_docs", "", "", "", 0)
	_, err := db.Breakdown(ctx, mcpA, week, q)
	wantCode(t, err, telemetry.ERANGETOOLARGE) // a tool filter: a raw scan of its 100 calls
	q, _ = analytics.ParseBreakdownQuery("client_name", unicode, "", "", "", 0)
	if _, err := db.Breakdown(ctx, mcpA, week, q); err == nil {
		t.Errorf("the budget counts the matching events: the unicode tool's 12 calls are over 10")
	}
	q, _ = analytics.ParseBreakdownQuery("client_name", "edge", "", "", "", 0)
	if _, err := db.Breakdown(ctx, mcpA, week, q); err != nil {
		t.Errorf("the budget counts the matching events: the edge tool's 2 calls are within 10: %v", err)
	}
}

func TestParseBreakdownQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		by, status string
		limit      int
		field      string
	}{
		{"tool", "", 0, ""}, {"attribute:x", "error", 200, ""}, {"attribute:", "", 0, "query.by"}, {"Tool", "", 0, "query.by"},
		{"", "", 0, "query.by"}, {"tool", "bad", 0, "query.status"}, {"tool", "", 201, "query.limit"}, {"tool", "", -1, "query.limit"},
	} {
		q, err := analytics.ParseBreakdownQuery(c.by, "", "", "", c.status, c.limit)
		var e *telemetry.Error
		if c.field == "" && err != nil || c.field != "" && (!errors.As(err, &e) || e.Field != c.field || e.Code != telemetry.EINVALID) {
			t.Errorf("%+v: %v", c, err)
		}
		if c.field == "" && c.limit == 0 && q.Limit != analytics.DefaultBreakdownLimit {
			t.Errorf("%+v: limit %d", c, q.Limit)
		}
	}
}

// TestBreakdownOnly checks the restriction to given values that the
// previous period of a comparison uses: the same figures as the full
// breakdown for the values that have items, nothing for the others.
func TestBreakdownOnly(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	if err := db.InsertRows(ctx, fixtureRows()); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{"tool", "client_name", "user_id", "attribute:seq"} {
		q, _ := analytics.ParseBreakdownQuery(by, "", "", "", "", 200)
		full, err := db.Breakdown(ctx, mcpA, week, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Items) < 2 {
			t.Fatalf("%s: %d values", by, len(full.Items))
		}
		q.Only = []string{full.Items[1].Value, `nope'?`, full.Items[0].Value}
		got, err := db.Breakdown(ctx, mcpA, week, q)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, by+" only", got.Items, full.Items[:2])
		if got.Other != nil {
			t.Errorf("%s: other %+v", by, got.Other)
		}
	}
}
