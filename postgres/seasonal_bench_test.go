package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// BenchmarkEvaluatePassSeasonalAndSLOs is the pass of docs/slos.md and the
// seasonal rules of docs/alerting.md at scale, on passFixture's 1,000 MCPs
// with their items copied two, three and four weeks back: "seasonal" is
// the 10,000 rules all seasonal (five window reads per chunk);
// "slos" 10,000 SLOs (ten per MCP, half on the search tool) alone;
// "rules_and_slos" both in one evaluator pass (alerting.RulesAndSLOs), the
// service's pass (goal: under 1 s on the 2-core machine). Each runs
// steady, after one pass that settles the states.
func BenchmarkEvaluatePassSeasonalAndSLOs(b *testing.B) {
	db, cdb, now := passFixture(b)
	ctx := context.Background()
	var mcps []string
	rows, err := db.Pool.Query(ctx, `SELECT id FROM mcps`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		mcps = append(mcps, id)
	}
	rows.Close()
	var items []analytics.StoredRow
	for i, mcp := range mcps { // a record per MCP and week, as passFixture's
		for w := 2; w <= alerting.SeasonalWeeks; w++ {
			for k := 0; k < 220; k++ {
				at := now.Add(-2 * time.Minute)
				if k >= 20 {
					at = now.Add(-time.Duration(k) * 6 * time.Minute)
				}
				it := analytics.Item{Timestamp: at.Add(-time.Duration(w) * alerting.Week), SessionID: "s", Method: "tools/call", Name: "search", Status: analytics.StatusOK}
				items = append(items, analytics.StoredRow{AccountID: "acc", MCPID: mcp, Node: "bench-weeks", Seq: uint64(i*alerting.SeasonalWeeks + w), ReceivedAt: now, Item: it})
			}
		}
	}
	if err := cdb.InsertRows(ctx, items); err != nil {
		b.Fatal(err)
	}
	testdb.Exec(b, db, `UPDATE rules SET baseline = 'seasonal', sensitivity = 'medium', comparator = CASE WHEN comparator = '<' THEN '<' ELSE '>' END`)
	testdb.Exec(b, db, `INSERT INTO slos (id, account_id, mcp_id, name, kind, objective, tool, error_kinds, window_days, channels, severity)
		SELECT 'slo_' || k || '_' || m.id, m.account_id, m.id, 'SLO ' || k, 'availability', 0.99 + k * 0.0009,
			CASE WHEN k % 2 = 0 THEN 'search' END, '{tool_error,exception}', 28, '{in_app,email}', 'ticket'
		FROM mcps m, generate_series(0, 9) AS k`)
	rules := alerting.NewRuleEvaluator(postgres.NewEvaluationStore(db), cdb.Reads, db.TransitionConcurrency())
	slos := &alerting.SLOEvaluator{Store: postgres.NewSLOService(db), SLI: cdb.Reads}
	both := alerting.RulesAndSLOs{RuleEvaluator: rules, SLOs: slos}
	run := func(name string, pass func() (int, error), want int) {
		b.Run(name, func(b *testing.B) {
			if _, err := pass(); err != nil { // settle the states
				b.Fatal(err)
			}
			m := newCPUMeter(b)
			m.start(b)
			for b.Loop() {
				n, err := pass()
				if err != nil || n != want {
					b.Fatal(n, err)
				}
			}
			m.stop(b)
			m.report(b)
		})
	}
	run("seasonal", func() (int, error) { s, err := rules.EvaluateAll(ctx, now); return s.Rules, err }, 10000)
	run("slos", func() (int, error) { s, err := slos.EvaluateAll(ctx, now); return s.SLOs, err }, 10000)
	run("rules_and_slos", func() (int, error) { s, err := both.EvaluateAll(ctx, now); return s.Rules + s.SLOs, err }, 20000)
}
