package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// traffic builds items of an MCP: at each time, calls items of which
// errors failed.
type traffic struct {
	rows []analytics.StoredRow
	acct string
	mcp  string
	// dur, when set, is every item's duration (ms).
	dur float64
}

func (tr *traffic) add(at time.Time, calls, errors int) {
	for i := range calls {
		it := analytics.Item{ID: testdb.RandHex(8), Timestamp: at, SessionID: "s-1", Method: "tools/call", Name: "search", Status: analytics.StatusOK}
		if tr.dur > 0 {
			it.DurationMs = &tr.dur
		}
		if i < errors {
			it.Status, it.ErrorType = analytics.StatusError, "ToolError"
		}
		tr.rows = append(tr.rows, analytics.StoredRow{AccountID: tr.acct, MCPID: tr.mcp, Node: "slo", Seq: uint64(len(tr.rows)), ReceivedAt: at, Item: it})
	}
}

// month is 28 days of steady traffic ending at now: 200 calls every 3
// hours, errPerMille of them failing.
func (tr *traffic) month(now time.Time, errPerMille int) {
	for at := now.Add(-28*24*time.Hour + time.Hour); at.Before(now.Add(-6 * time.Hour)); at = at.Add(3 * time.Hour) {
		tr.add(at, 200, 200*errPerMille/1000)
	}
	// The last six hours: 50 calls every half hour.
	for at := now.Add(-6 * time.Hour).Add(time.Minute); at.Before(now); at = at.Add(30 * time.Minute) {
		tr.add(at, 50, 50*errPerMille/1000)
	}
}

// A synthetic month of traffic on five MCPs, each with a 99.5% SLO on
// its search tool: a fast burn (20% errors in the last hour) pages at
// once; so does a latency SLO (99% of calls within 500 ms) when the last
// hour's calls take 2 s; a slow burn (1% errors for three days, burn rate 2) files a
// ticket and never pages; noise well inside the budget does neither. The
// alerts reach the inbox and email like a rule's firing, saying how much
// budget is left and how long it lasts; a snoozed SLO changes state
// without notifying.
func TestSLOBurnRateAlertsOverASyntheticMonth(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	ctx := context.Background()
	now := e.now.Truncate(time.Minute)
	slos := postgres.NewSLOService(e.db)
	mcps := map[string]string{"fast": e.tm.MCPID, "slow": testdb.AddMCP(t, e.db, e.tm.AccountID), "noise": testdb.AddMCP(t, e.db, e.tm.AccountID),
		"snoozed": testdb.AddMCP(t, e.db, e.tm.AccountID), "latency": testdb.AddMCP(t, e.db, e.tm.AccountID)}
	var rows []analytics.StoredRow
	for name, mcp := range mcps {
		tr := &traffic{acct: e.tm.AccountID, mcp: mcp}
		switch name {
		case "noise":
			tr.month(now, 2) // 0.2% errors: burn rate 0.4
		case "slow":
			tr.month(now, 1)
			for at := now.Add(-72 * time.Hour).Add(time.Minute); at.Before(now); at = at.Add(30 * time.Minute) {
				tr.add(at, 100, 1) // 1% over three days: burn rate 2
			}
		case "latency":
			tr.dur = 100
			tr.month(now, 1)
			tr.dur = 2000
			tr.add(now.Add(-50*time.Minute), 300, 0)
			tr.add(now.Add(-2*time.Minute), 300, 0)
		default: // fast, snoozed
			tr.month(now, 1)
			tr.add(now.Add(-50*time.Minute), 300, 60)
			tr.add(now.Add(-2*time.Minute), 300, 60) // 20%: burn rate 40
		}
		rows = append(rows, tr.rows...)
	}
	if err := e.ch.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	tool := "search"
	created := map[string]alerting.SLO{}
	for name, mcp := range mcps {
		c := alerting.SLOCreate{Name: "Search " + name, Kind: alerting.SLOAvailability, Objective: 0.995, Tool: &tool,
			Channels: []string{alerting.ChannelInApp, alerting.ChannelEmail}}
		if name == "latency" {
			threshold := 500.0
			c.Kind, c.Objective, c.ThresholdMs = alerting.SLOLatency, 0.99, &threshold
		}
		if name == "snoozed" {
			later := now.Add(time.Hour)
			c.SnoozedUntil = &later
		}
		s, err := slos.CreateSLO(ctx, e.tm.AccountID, mcp, c)
		if err != nil {
			t.Fatal(err)
		}
		created[name] = s
	}
	ev := &alerting.SLOEvaluator{Store: slos, SLI: e.ch.Reads}
	sum, err := ev.EvaluateAll(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum.SLOs != 5 || sum.Alerted != 4 || sum.Failed != 0 {
		t.Fatalf("pass %+v, want 4 alerts of 5 SLOs", sum)
	}
	want := map[string]string{"fast": alerting.SLOStatePage, "latency": alerting.SLOStatePage, "slow": alerting.SLOStateTicket, "noise": alerting.SLOStateOK, "snoozed": alerting.SLOStatePage}
	for name, s := range created {
		got, err := slos.SLO(ctx, e.tm.AccountID, s.ID)
		if err != nil || got.State != want[name] {
			t.Errorf("%s: state %q, %v; want %q", name, got.State, err, want[name])
		}
		ds := deliveries(t, e.db, s.ID)
		n := 0
		if name == "fast" || name == "slow" || name == "latency" {
			n = 2
		}
		wantCounts(t, ds, map[string]int{alerting.ChannelInApp: n, alerting.ChannelEmail: n})
	}
	var title, body string
	if err := e.db.Pool.QueryRow(ctx, `SELECT title, body FROM deliveries WHERE rule_id = $1 AND channel = 'in_app' LIMIT 1`,
		created["fast"].ID).Scan(&title, &body); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(title, "Page: Search fast (") || !strings.Contains(body, "% of the error budget left, gone in ") ||
		!strings.Contains(body, "99.5% of search calls succeed over 28 days") {
		t.Fatalf("page title %q body %q", title, body)
	}
	if err := e.db.Pool.QueryRow(ctx, `SELECT title FROM deliveries WHERE rule_id = $1 AND channel = 'in_app' LIMIT 1`,
		created["slow"].ID).Scan(&title); err != nil || !strings.HasPrefix(title, "Ticket: Search slow") {
		t.Fatalf("ticket title %q, %v", title, err)
	}
	if err := e.db.Pool.QueryRow(ctx, `SELECT body FROM deliveries WHERE rule_id = $1 AND channel = 'in_app' LIMIT 1`,
		created["latency"].ID).Scan(&body); err != nil || !strings.Contains(body, "99% of search calls answer within 500 ms over 28 days") {
		t.Fatalf("latency page body %q, %v", body, err)
	}

	// The figures behind it, from the rollups.
	rds, err := e.ch.Reads.SLICounts(ctx, now, []int{5, 30, 60, 360}, []int{72}, []analytics.SLIQuery{created["fast"].SLIQuery(), created["noise"].SLIQuery()})
	if err != nil {
		t.Fatal(err)
	}
	fast, noise := created["fast"].Figures(rds[0]), created["noise"].Figures(rds[1])
	if fast.BurnRates["1h"] < 14.4 || fast.BurnRates["5m"] < 14.4 || fast.SLI == nil || fast.ErrorBudget.Remaining >= 1 {
		t.Fatalf("fast figures %+v", fast)
	}
	if noise.BurnRates["3d"] > 1 || noise.ErrorBudget.Remaining < 0.5 || *noise.SLI < 0.995 {
		t.Fatalf("noise figures %+v (sli %v)", noise, *noise.SLI)
	}

	// A second pass at the same moment changes nothing and sends nothing.
	if sum, err := ev.EvaluateAll(ctx, now); err != nil || sum.Alerted+sum.Changed+sum.Resolved != 0 {
		t.Fatalf("second pass %+v, %v", sum, err)
	}
}
