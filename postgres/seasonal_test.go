package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

// weeklyHistory writes, for each of the four weeks before at, calls[i]
// items of the MCP ten minutes before the same instant of that week.
func (e *evalEnv) weeklyHistory(t *testing.T, mcpID string, at time.Time, calls [4]int) {
	t.Helper()
	for i, n := range calls {
		testdb.Events(t, e.ch, e.tm.AccountID, mcpID, "", at.Add(-time.Duration(i+1)*alerting.Week-10*time.Minute), n, 0)
	}
}

func seasonalRule(name, comparator string) alerting.RuleCreate {
	b := alerting.BaselineSeasonal
	return alerting.RuleCreate{Name: name, Metric: alerting.MetricCalls, Comparator: comparator, WindowMinutes: 30,
		Channels: []string{alerting.ChannelInApp, alerting.ChannelEmail}, Baseline: &b}
}

// Four synthetic weeks with a weekly rhythm, busy on Monday mornings and
// quiet on Sunday nights: a calls > rule stays quiet through the
// Monday-morning peak and fires on the same volume on a Sunday night,
// measured by a pass (one batch of five window reads) and on demand; a
// calls < rule fires when the server goes quiet on a Monday morning. The
// firing reaches the inbox saying what was expected, and the history
// keeps the band.
func TestSeasonalRulesLearnTheWeeksRhythm(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	ctx := context.Background()
	// The last Monday 09:30 at least a day ago, and the Sunday night
	// before it.
	monday := time.Date(e.now.Year(), e.now.Month(), e.now.Day(), 9, 30, 0, 0, time.UTC).Add(-24 * time.Hour)
	for monday.Weekday() != time.Monday {
		monday = monday.Add(-24 * time.Hour)
	}
	sunday := monday.Add(-9 * time.Hour) // Monday 00:30, the end of Sunday night
	peak := [4]int{1000, 960, 1040, 1010}
	night := [4]int{8, 12, 10, 9}
	e.weeklyHistory(t, e.tm.MCPID, monday, peak)
	e.weeklyHistory(t, e.tm.MCPID, sunday, night)
	quietMCP := testdb.AddMCP(t, e.db, e.tm.AccountID)
	e.weeklyHistory(t, quietMCP, monday, peak)

	spike := e.rule(t, seasonalRule("Unusual volume", alerting.CompGT))
	drop, err := e.s.Rules.CreateRule(ctx, e.tm.AccountID, quietMCP, seasonalRule("Unusually quiet", alerting.CompLT))
	if err != nil {
		t.Fatal(err)
	}

	// Monday morning, the usual peak on one MCP, 30 calls on the other.
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", monday.Add(-10*time.Minute), 1000, 0)
	testdb.Events(t, e.ch, e.tm.AccountID, quietMCP, "", monday.Add(-10*time.Minute), 30, 0)
	sum := e.pass(t, monday)
	if sum.Fired != 1 || sum.Failed != 0 {
		t.Fatalf("Monday pass %+v, want the drop alone to fire", sum)
	}
	if ev := e.evaluate(t, spike.ID, monday); ev.State != alerting.StateOK || ev.Expected == nil ||
		ev.Expected.Low > 1000 || ev.Expected.High < 1000 {
		t.Fatalf("Monday peak: %+v (expected %+v)", ev, ev.Expected)
	}
	ev := e.evaluate(t, drop.ID, monday)
	if ev.State != alerting.StateFiring || ev.Expected == nil || ev.Expected.Low <= 30 {
		t.Fatalf("Monday quiet: %+v", ev)
	}
	inbox := deliveries(t, e.db, drop.ID)
	wantCounts(t, inbox, map[string]int{alerting.ChannelInApp: 2, alerting.ChannelEmail: 2})
	var body string
	if err := e.db.Pool.QueryRow(ctx, `SELECT body FROM deliveries WHERE rule_id = $1 AND channel = 'in_app' LIMIT 1`, drop.ID).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "calls expected ") || !strings.Contains(body, " at this hour, got 30") {
		t.Fatalf("delivery body %q", body)
	}
	page, err := e.s.Rules.RuleEvents(ctx, e.tm.AccountID, drop.ID, alerting.RuleEventFilter{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].Expected == nil || *page.Items[0].Expected != *ev.Expected {
		t.Fatalf("history %+v, %v (want the band %+v)", page.Items, err, ev.Expected)
	}

	// Sunday night: the usual trickle does not fire, Monday's volume does.
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", sunday.Add(-20*time.Minute), 11, 0)
	if ev := e.evaluate(t, spike.ID, sunday); ev.Fired || ev.Expected == nil || ev.Expected.High >= 100 {
		t.Fatalf("Sunday trickle: %+v %+v", ev, ev.Expected)
	}
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", sunday.Add(-10*time.Minute), 1000, 0)
	if ev := e.evaluate(t, spike.ID, sunday); !ev.Fired || ev.Deliveries != 4 {
		t.Fatalf("Sunday peak: %+v", ev)
	}
}

// A seasonal rule on an MCP with one week of history holds its state,
// however far the value is from that week's.
func TestSeasonalRuleNeedsTwoWeeks(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	r := e.rule(t, seasonalRule("Unusually quiet", alerting.CompLT))
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", e.now.Add(-alerting.Week-10*time.Minute), 1000, 0)
	ev := e.evaluate(t, r.ID, e.now)
	if ev.State != alerting.StateOK || ev.Expected != nil {
		t.Fatalf("one week judged: %+v", ev)
	}
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", e.now.Add(-2*alerting.Week-10*time.Minute), 1000, 0)
	if ev := e.evaluate(t, r.ID, e.now); !ev.Fired || ev.Expected == nil {
		t.Fatalf("two weeks: %+v", ev)
	}
}
