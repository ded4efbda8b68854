package clickhouse_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// testWindowTotalsRandom checks the window totals of WindowSets (summed
// per MCP and key in ClickHouse) against a plain count over the raw
// events, for random window ends (to the millisecond) and many window
// lengths per MCP, some MCPs asking for percentiles only: every window's
// keys, calls and errors exact; no distinct counts where only percentiles
// were asked for, and the percentiles' presence as WindowStats has them.
func testWindowTotalsRandom(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(29, 31))
	mcps := []string{mcpA, mcpB, mcpC, "mcp-none"}
	measured := 0 // windows with items
	for c := 0; c < 8; c++ {
		to := day0.Add(time.Duration(rnd.Int64N(int64(8*24*time.Hour/time.Millisecond))) * time.Millisecond)
		reqs := map[string]analytics.WindowRequest{}
		for _, mcp := range mcps {
			var r analytics.WindowRequest
			for range 1 + rnd.IntN(16) {
				r.Minutes = append(r.Minutes, 1+rnd.IntN(1440))
			}
			// The first case asks every MCP for percentiles only, which
			// leaves the distinct states out of the statement.
			if c == 0 || rnd.IntN(2) == 0 {
				r.DetailMinutes = []int{r.Minutes[rnd.IntN(len(r.Minutes))]}
				r.QuantilesOnly = c == 0 || rnd.IntN(2) == 0
			}
			reqs[mcp] = r
		}
		got, err := db.WindowSets(ctx, to, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for mcp, r := range reqs {
			for _, w := range r.Minutes {
				from := to.Add(-time.Duration(w) * time.Minute)
				what := fmt.Sprintf("case %d %s %d min to %s", c, mcp, w, to.Format(time.RFC3339Nano))
				keys := o.windowKeys(mcp, from, to)
				if len(got[mcp][w]) != len(keys) {
					t.Errorf("%s: keys %v, want %d", what, got[mcp][w], len(keys))
				}
				detail := slices.Contains(r.DetailMinutes, w)
				var plain map[string]map[string]analytics.WindowStat
				if detail {
					if plain, err = db.WindowStats(ctx, from, to, []string{mcp}); err != nil {
						t.Fatal(err)
					}
				}
				if len(keys) > 0 {
					measured++
				}
				for key, items := range keys {
					a, g := aggregate(items), got[mcp][w][key]
					if g.Calls != a.calls || g.Errors != a.errors {
						t.Errorf("%s %q: %d calls %d errors, want %d and %d", what, key, g.Calls, g.Errors, a.calls, a.errors)
					}
					switch {
					case !detail:
						if g.P95Ms != nil || g.Sessions != 0 || g.Users != 0 {
							t.Errorf("%s %q: details %+v not asked for", what, key, g)
						}
					case r.QuantilesOnly:
						if g.Sessions != 0 || g.Users != 0 || (g.P95Ms == nil) != (plain[mcp][key].P95Ms == nil) {
							t.Errorf("%s %q: %+v, want percentiles only as in %+v", what, key, g, plain[mcp][key])
						}
					default:
						if g.Sessions != a.sessions || g.Users != a.users || (g.P95Ms == nil) != (plain[mcp][key].P95Ms == nil) {
							t.Errorf("%s %q: %+v, want %d sessions %d users as in %+v", what, key, g, a.sessions, a.users, plain[mcp][key])
						}
					}
				}
			}
		}
	}
	if measured < 20 {
		t.Errorf("only %d windows with items: the cases measure too little", measured)
	}
}

// windowKeys is the items of mcp in [from, to) by window key: "" for all,
// a tool name for its tools/call items.
func (o oracle) windowKeys(mcp string, from, to time.Time) map[string][]analytics.Item {
	keys := map[string][]analytics.Item{}
	for _, row := range o.rows {
		ts := row.Item.Timestamp
		if row.MCPID != mcp || ts.Before(from) || !ts.Before(to) {
			continue
		}
		keys[""] = append(keys[""], row.Item)
		if isTool(row.Item) {
			keys[row.Item.Name] = append(keys[row.Item.Name], row.Item)
		}
	}
	return keys
}
