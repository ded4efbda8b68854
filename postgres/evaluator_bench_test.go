package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// benchRuleShapes are the ten rules of every MCP in the pass benchmark:
// four window lengths, every metric, with and without a tool. Against the
// data below, shapes 0 and 8 breach on one MCP in ten.
var benchRuleShapes = []struct {
	metric, cmp string
	tool        *string
	threshold   float64
	window      int
}{
	{alerting.MetricErrorRate, ">", nil, 0.4, 5},
	{alerting.MetricCalls, "<", nil, 1, 15},
	{alerting.MetricErrors, ">", nil, 1000, 60},
	{alerting.MetricP95, ">", nil, 10000, 5},
	{alerting.MetricErrorRate, ">", nil, 0.9, 15},
	{alerting.MetricCalls, ">", nil, 100000, 60},
	{alerting.MetricErrorRate, ">", ptr("search"), 0.99, 5},
	{alerting.MetricP95, ">", ptr("search"), 5000, 60},
	{alerting.MetricErrors, ">=", nil, 9, 5},
	{alerting.MetricCalls, ">", nil, 1000000, 1440},
}

// passFixture builds 100 accounts of 5 people, each with 10 MCPs of 10
// rules naming in_app and email: 10,000 enabled rules on 1,000 MCPs. Each
// MCP has 20 items two minutes ago (i % 10 of them errors, half of them
// search calls) and 200 items spread over the last day, and the same a week
// earlier.
func passFixture(b *testing.B) (*postgres.DB, *clickhouse.DB, time.Time) {
	_, db := testdb.Postgres(b)
	cdb := testdb.ClickHouse(b)
	ctx := context.Background()
	// The pass runs at 22:00 UTC of the day before, whatever the hour the
	// benchmark runs: every item of the last 22 hours (and of the same
	// hours a week earlier) then lies in one day's partition, the fullest
	// a week-ago read meets. Run at the real time just after midnight,
	// that partition would hold a tenth of the items, and the week-ago
	// read would cost next to nothing.
	now := time.Now().UTC().Truncate(24 * time.Hour).Add(-2 * time.Hour)
	var mcps []string
	for a := 0; a < 100; a++ {
		tm := testdb.NewTeam(b, db, 5)
		mcps = append(mcps, tm.MCPID)
		for m := 1; m < 10; m++ {
			mcps = append(mcps, testdb.AddMCP(b, db, tm.AccountID))
		}
	}
	for j, sh := range benchRuleShapes {
		testdb.Exec(b, db, `INSERT INTO rules (id, account_id, mcp_id, name, metric, tool, comparator, threshold, window_minutes, channels)
			SELECT 'rul_' || $1::int || '_' || m.id, m.account_id, m.id, 'Rule ' || $1::int, $2, $3, $4, $5, $6, '{in_app,email}'
			FROM mcps m WHERE m.id = ANY($7)`, j, sh.metric, sh.tool, sh.cmp, sh.threshold, sh.window, mcps)
	}
	// Each MCP's items are one write-ahead-log record (an SDK's batch),
	// and the same a week earlier another: as the service stores them,
	// whose insert markers (clickhouse/ledger.go) name runs of records.
	// A record per item, alternating days, would give each day's marker a
	// run per item (megabytes in every rollup's mcp_id column) that no
	// ingest produces.
	var rows []analytics.StoredRow
	for i, mcp := range mcps {
		for k := 0; k < 220; k++ {
			at := now.Add(-2 * time.Minute)
			if k >= 20 {
				at = now.Add(-time.Duration(k) * 6 * time.Minute)
			}
			d := float64(50 + k)
			it := analytics.Item{Timestamp: at, SessionID: "s", Method: "resources/read", Status: analytics.StatusOK, DurationMs: &d}
			if k%2 == 0 {
				it.Method, it.Name = "tools/call", "search"
			}
			if k < i%10 {
				it.Status = analytics.StatusError
			}
			rows = append(rows, analytics.StoredRow{AccountID: "acc", MCPID: mcp, Node: "bench", Seq: uint64(i), ReceivedAt: now, Item: it})
			// The same a week earlier, which week_ago baselines read.
			it.Timestamp = at.Add(-alerting.BaselineOffset)
			rows = append(rows, analytics.StoredRow{AccountID: "acc", MCPID: mcp, Node: "bench", Seq: uint64(len(mcps) + i), ReceivedAt: now, Item: it})
		}
	}
	if err := cdb.InsertRows(ctx, rows); err != nil {
		b.Fatal(err)
	}
	return db, cdb, now
}

// BenchmarkEvaluatePass10kRules is one evaluation pass over 10,000 enabled
// rules across 1,000 MCPs (goal: within 10 s on the 2-core machine).
// "firing" starts every pass from state ok, so 200 rules fire and fan out
// (2,000 deliveries); "steady" repeats passes with nothing changing;
// "steady_half_week_ago" is steady with half the rules on a week_ago
// baseline; "all_firing" has every rule fire.
func BenchmarkEvaluatePass10kRules(b *testing.B) {
	db, cdb, now := passFixture(b)
	ev := alerting.NewRuleEvaluator(postgres.NewEvaluationStore(db), cdb.Reads, db.TransitionConcurrency())
	ctx := context.Background()
	b.Run("firing", func(b *testing.B) {
		var sum alerting.PassSummary
		for b.Loop() {
			b.StopTimer()
			testdb.Exec(b, db, `UPDATE rules SET state = 'ok', last_fired_at = NULL`)
			testdb.Exec(b, db, `DELETE FROM deliveries`)
			b.StartTimer()
			var err error
			if sum, err = ev.EvaluateAll(ctx, now); err != nil {
				b.Fatal(err)
			}
		}
		if sum.Rules != 10000 || sum.Fired != 200 {
			b.Fatalf("pass %+v", sum)
		}
		b.ReportMetric(float64(sum.Fired), "firings/op")
	})
	b.Run("steady", func(b *testing.B) {
		m := newCPUMeter(b)
		m.start(b)
		for b.Loop() {
			sum, err := ev.EvaluateAll(ctx, now)
			if err != nil || sum.Fired != 0 {
				b.Fatal(sum, err)
			}
		}
		m.stop(b)
		m.report(b)
	})
	// Beside "steady": the same pass with half the rules (five shapes of
	// ten) comparing with the same window a week earlier, which adds one
	// read of those windows a week back per chunk.
	b.Run("steady_half_week_ago", func(b *testing.B) {
		testdb.Exec(b, db, `UPDATE rules SET baseline = 'week_ago' WHERE name IN ('Rule 0', 'Rule 2', 'Rule 4', 'Rule 6', 'Rule 8')`)
		if _, err := ev.EvaluateAll(ctx, now); err != nil { // settle the states under the new definition
			b.Fatal(err)
		}
		m := newCPUMeter(b)
		m.start(b)
		for b.Loop() {
			sum, err := ev.EvaluateAll(ctx, now)
			if err != nil || sum.Fired != 0 || sum.Rules != 10000 {
				b.Fatal(sum, err)
			}
		}
		m.stop(b)
		m.report(b)
		testdb.Exec(b, db, `UPDATE rules SET baseline = NULL`)
	})
	// The worst case, beyond the goal: every rule of every account fires
	// in the same pass (10,000 transactions, 100,000 deliveries).
	b.Run("all_firing", func(b *testing.B) {
		testdb.Exec(b, db, `UPDATE rules SET metric = 'calls', comparator = '>=', threshold = 0, tool = NULL`)
		for b.Loop() {
			b.StopTimer()
			testdb.Exec(b, db, `UPDATE rules SET state = 'ok', last_fired_at = NULL`)
			testdb.Exec(b, db, `DELETE FROM deliveries`)
			b.StartTimer()
			sum, err := ev.EvaluateAll(ctx, now)
			if err != nil || sum.Fired != 10000 {
				b.Fatal(sum, err)
			}
		}
	})
}

// BenchmarkFanOut1000 is one firing fanned out to a team of 1,000 people
// on in_app, email and a connected Slack: 2,001 deliveries in the firing's
// transaction (goal: within 1 s on the 2-core machine).
func BenchmarkFanOut1000(b *testing.B) {
	_, db := testdb.Postgres(b)
	cdb := testdb.ClickHouse(b)
	ctx := context.Background()
	tm := testdb.NewTeam(b, db, 1000)
	s := newStores(b, db, cdb)
	if _, err := s.Channels.ConnectWebhook(ctx, tm.AccountID, tm.Users[0], alerting.ChannelSlack, slackURL); err != nil {
		b.Fatal(err)
	}
	r, err := s.Rules.CreateRule(ctx, tm.AccountID, tm.MCPID, errorRule(alerting.ChannelInApp, alerting.ChannelEmail, alerting.ChannelSlack))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	testdb.Events(b, cdb, tm.AccountID, tm.MCPID, "", now.Add(-time.Minute), 10, 5)
	for b.Loop() {
		b.StopTimer()
		testdb.Exec(b, db, `UPDATE rules SET state = 'ok'`)
		testdb.Exec(b, db, `DELETE FROM deliveries`)
		b.StartTimer()
		ev, err := s.Eval.EvaluateRule(ctx, tm.AccountID, r.ID, now)
		if err != nil || !ev.Fired {
			b.Fatal(ev, err)
		}
	}
	b.StopTimer()
	var n int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM deliveries`).Scan(&n)
	if n != 2001 {
		b.Fatalf("%d deliveries", n)
	}
	b.ReportMetric(float64(n), "deliveries/op")
}

// BenchmarkEvaluatePass1440Windows is the fairness case: 10,000 rules over
// 1,000 MCPs as above, of which 1,440 are on one busy MCP (100,000 items
// over its last day) with every window length from 1 to 1,440 minutes, a
// third of them p95 rules (goal: one pass within 10 s on the 2-core
// machine, read in one scan per chunk of accounts rather than one per
// window length).
func BenchmarkEvaluatePass1440Windows(b *testing.B) {
	db, cdb, now := passFixture(b)
	ctx := context.Background()
	var busy, account string
	if err := db.Pool.QueryRow(ctx, `SELECT id, account_id FROM mcps ORDER BY id LIMIT 1`).Scan(&busy, &account); err != nil {
		b.Fatal(err)
	}
	// Keep 10,000 rules: drop 1,440 of the others, add 1,440 windows.
	testdb.Exec(b, db, `DELETE FROM rules WHERE id IN (SELECT id FROM rules WHERE mcp_id <> $1 ORDER BY id LIMIT 1440)`, busy)
	testdb.Exec(b, db, `INSERT INTO rules (id, account_id, mcp_id, name, metric, comparator, threshold, window_minutes, channels)
		SELECT 'rul_w' || w, $1, $2, 'Window ' || w, (ARRAY['calls', 'error_rate', 'p95_ms'])[w % 3 + 1], '>', 1e9, w, '{in_app}'
		FROM generate_series(1, 1440) AS w`, account, busy)
	rows := make([]analytics.StoredRow, 0, 100_000)
	for k := 0; k < 100_000; k++ {
		d := float64(k % 997)
		it := analytics.Item{Timestamp: now.Add(-time.Duration(k) * 864 * time.Millisecond), SessionID: "s",
			Method: "tools/call", Name: []string{"search", "fetch", "read"}[k%3], Status: analytics.StatusOK, DurationMs: &d}
		rows = append(rows, analytics.StoredRow{AccountID: account, MCPID: busy, Node: "bench-busy", Seq: uint64(k), ReceivedAt: now, Item: it})
	}
	if err := cdb.InsertRows(ctx, rows); err != nil {
		b.Fatal(err)
	}
	ev := alerting.NewRuleEvaluator(postgres.NewEvaluationStore(db), cdb.Reads, db.TransitionConcurrency())
	for b.Loop() {
		sum, err := ev.EvaluateAll(ctx, now)
		if err != nil || sum.Rules != 10000 || sum.Deferred != 0 {
			b.Fatal(sum, err)
		}
	}
}
