package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/postgres"
)

// evalEnv is a team with one MCP, both databases and the stores.
type evalEnv struct {
	db  *postgres.DB
	url string
	ch  *clickhouse.DB
	tm  testdb.Team
	s   stores
	now time.Time
}

func newEvalEnv(t *testing.T, size int) *evalEnv {
	t.Helper()
	url, db := testdb.Postgres(t)
	cdb := testdb.ClickHouse(t)
	tm := testdb.NewTeam(t, db, size)
	return &evalEnv{db: db, url: url, ch: cdb, tm: tm, s: newStores(t, db, cdb), now: time.Now().UTC()}
}

// failing writes a minute of 50% errors into the MCP's last 5 minutes.
func (e *evalEnv) failing(t *testing.T) {
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", e.now.Add(-time.Minute), 10, 5)
}

func (e *evalEnv) rule(t *testing.T, c alerting.RuleCreate) alerting.Rule {
	t.Helper()
	r, err := e.s.Rules.CreateRule(context.Background(), e.tm.AccountID, e.tm.MCPID, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *evalEnv) evaluate(t *testing.T, ruleID string, at time.Time) alerting.Evaluation {
	t.Helper()
	ev, err := e.s.Eval.EvaluateRule(context.Background(), e.tm.AccountID, ruleID, at)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func (e *evalEnv) pass(t *testing.T, at time.Time) alerting.PassSummary {
	t.Helper()
	sum, err := e.s.Eval.EvaluateAll(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// wantStates checks the rules' states, by id.
func (e *evalEnv) wantStates(t *testing.T, want map[string]string) {
	t.Helper()
	for id, state := range want {
		var name, got string
		if err := e.db.Pool.QueryRow(context.Background(), `SELECT name, state FROM rules WHERE id = $1`, id).Scan(&name, &got); err != nil {
			t.Fatal(err)
		}
		if got != state {
			t.Errorf("%s: state %s, want %s", name, got, state)
		}
	}
}

func (e *evalEnv) connect(t *testing.T, channel, url string) {
	t.Helper()
	if _, err := e.s.Channels.ConnectWebhook(context.Background(), e.tm.AccountID, e.tm.Users[0], channel, url); err != nil {
		t.Fatal(err)
	}
}

func wantCounts(t *testing.T, ds []deliveryRow, want map[string]int) {
	t.Helper()
	got := countBy(ds)
	for _, ch := range []string{alerting.ChannelInApp, alerting.ChannelEmail, alerting.ChannelSlack, alerting.ChannelDiscord} {
		if got[ch] != want[ch] {
			t.Fatalf("deliveries by channel %v, want %v (%v)", got, want, ds)
		}
	}
}

// Seed §6: when a rule fires, a delivery is created for each person on the
// team, on each channel where the rule and the person's preference agree;
// in-app deliveries are delivered at once, email recorded as queued.
func TestRuleFiringCreatesADeliveryPerPersonAndChannel(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 3)
	r := e.rule(t, errorRule(alerting.ChannelInApp, alerting.ChannelEmail))
	e.failing(t)
	sum := e.pass(t, e.now)
	if sum.Rules != 1 || sum.Fired != 1 || sum.Failed != 0 {
		t.Fatalf("pass %+v", sum)
	}
	ds := deliveries(t, e.db, r.ID)
	wantCounts(t, ds, map[string]int{"in_app": 3, "email": 3})
	people := map[string]bool{}
	for _, d := range ds {
		want := alerting.StatusQueued
		if d.Channel == alerting.ChannelInApp {
			want = alerting.StatusDelivered
		}
		if d.Status != want || d.Recipient == nil || d.RuleName != "Errors" {
			t.Errorf("delivery %+v", d)
		}
		people[*d.Recipient] = true
	}
	for _, u := range e.tm.Users {
		if !people[u] {
			t.Errorf("%s got nothing", u)
		}
	}
	got, err := e.s.Rules.Rule(context.Background(), e.tm.AccountID, r.ID)
	if err != nil || got.State != alerting.StateFiring || got.LastFiredAt == nil || !got.LastFiredAt.Equal(e.now.Truncate(time.Microsecond)) {
		t.Fatalf("rule after firing: %+v, %v", got, err)
	}
}

// Seed §1: a notification is delivered only where the rule and the
// person's preference agree: a person who switched email off gets no email.
func TestPreferenceOffMeansNoDeliveryOnThatChannel(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 3)
	ctx := context.Background()
	off := false
	if _, _, err := e.s.Channels.UpdatePreferences(ctx, e.tm.AccountID, e.tm.Users[1], alerting.PreferencesUpdate{Email: &off}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.s.Channels.UpdatePreferences(ctx, e.tm.AccountID, e.tm.Users[2], alerting.PreferencesUpdate{InApp: &off, Email: &off}); err != nil {
		t.Fatal(err)
	}
	r := e.rule(t, errorRule(alerting.ChannelInApp, alerting.ChannelEmail))
	e.failing(t)
	if ev := e.evaluate(t, r.ID, e.now); !ev.Fired {
		t.Fatalf("not fired: %+v", ev)
	}
	got := map[string]bool{}
	for _, d := range deliveries(t, e.db, r.ID) {
		got[d.String()] = true
	}
	want := map[string]bool{
		"in_app/" + e.tm.Users[0] + "/delivered": true, "email/" + e.tm.Users[0] + "/queued": true,
		"in_app/" + e.tm.Users[1] + "/delivered": true,
	}
	if len(got) != len(want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("deliveries %v, want %v", got, want)
		}
	}
}

// The rule says how loud: a rule naming only email gives nobody an inbox
// item, whatever their preferences.
func TestRuleNotNamingAChannelGetsNothingThere(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	r := e.rule(t, errorRule(alerting.ChannelEmail))
	e.failing(t)
	e.evaluate(t, r.ID, e.now)
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{"email": 2})
}

// Seed §3 and §7: a rule naming a channel with no connection delivers
// nothing there, raises no error and creates no substitute destination.
func TestUnconnectedChannelGetsNothingAndNoError(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	r := e.rule(t, errorRule(alerting.ChannelSlack, alerting.ChannelDiscord))
	e.failing(t)
	sum := e.pass(t, e.now)
	if sum.Fired != 1 || sum.Failed != 0 {
		t.Fatalf("pass %+v", sum)
	}
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{})
	got, _ := e.s.Rules.Rule(context.Background(), e.tm.AccountID, r.ID)
	if got.State != alerting.StateFiring {
		t.Fatalf("state %s: the rule fires even with nowhere to deliver", got.State)
	}
}

// Seed §3: a connected team channel gets exactly one queued delivery for
// the whole team; the unconnected one named beside it gets nothing.
func TestConnectedTeamChannelGetsExactlyOneQueuedDelivery(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 4)
	e.connect(t, alerting.ChannelSlack, slackURL)
	r := e.rule(t, errorRule(alerting.ChannelSlack, alerting.ChannelDiscord, alerting.ChannelInApp))
	e.failing(t)
	e.evaluate(t, r.ID, e.now)
	ds := deliveries(t, e.db, r.ID)
	wantCounts(t, ds, map[string]int{"slack": 1, "in_app": 4})
	for _, d := range ds {
		if d.Channel == alerting.ChannelSlack && (d.Status != alerting.StatusQueued || d.Recipient != nil) {
			t.Fatalf("slack delivery %+v", d)
		}
	}
	// Queued rows are due for a future sender at once.
	var due int
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM deliveries
		WHERE status = 'queued' AND next_attempt_at <= now() AND attempts = 0 AND claimed_at IS NULL`).Scan(&due); err != nil || due != 1 {
		t.Fatalf("due queued deliveries %d, %v", due, err)
	}
}

// Seed §2 rule 3: the audience is the team at the moment the rule fired;
// later membership changes do not alter existing items.
func TestMembershipChangeAfterFiringDoesNotAlterDeliveries(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 3)
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	e.failing(t)
	e.evaluate(t, r.ID, e.now)
	before := deliveries(t, e.db, r.ID)

	// Someone leaves, someone joins.
	testdb.Exec(t, e.db, `DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`, e.tm.AccountID, e.tm.Users[2])
	newcomer := testdb.NewTeam(t, e.db, 1).Users[0]
	testdb.Exec(t, e.db, `INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, 'member')`, e.tm.AccountID, newcomer)

	after := deliveries(t, e.db, r.ID)
	if len(after) != 3 || len(before) != 3 {
		t.Fatalf("deliveries before %v, after %v", before, after)
	}
	for i := range before {
		if before[i].String() != after[i].String() {
			t.Fatalf("deliveries changed: %v -> %v", before, after)
		}
	}
	page, err := e.s.Inbox.Inbox(context.Background(), e.tm.AccountID, e.tm.Users[2], alerting.InboxFilter{Limit: 10})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("the leaver's inbox item is gone: %+v, %v", page, err)
	}
	page, _ = e.s.Inbox.Inbox(context.Background(), e.tm.AccountID, newcomer, alerting.InboxFilter{Limit: 10})
	if len(page.Items) != 0 {
		t.Fatalf("the newcomer got an old item: %+v", page)
	}
}

// Contract: a rule does not fire again while firing.
func TestNoRefireWhileFiring(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	e.failing(t)
	if ev := e.evaluate(t, r.ID, e.now); !ev.Fired || ev.State != alerting.StateFiring {
		t.Fatalf("first evaluation %+v", ev)
	}
	for i := 1; i <= 3; i++ {
		ev := e.evaluate(t, r.ID, e.now.Add(time.Duration(i)*time.Second))
		if ev.Fired || ev.State != alerting.StateFiring || ev.Value == nil || *ev.Value != 0.5 {
			t.Fatalf("evaluation %d while firing: %+v", i, ev)
		}
		if sum := e.pass(t, e.now.Add(time.Duration(i)*time.Second)); sum.Fired != 0 || sum.Resolved != 0 {
			t.Fatalf("pass %d while firing: %+v", i, sum)
		}
	}
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{"in_app": 2})
}

// Contract: firing -> ok resolves (no deliveries), and a later breach fires
// again with new deliveries.
func TestResolveThenFireAgain(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	e.failing(t)
	e.evaluate(t, r.ID, e.now)

	// Ten minutes later the errors are out of the 5-minute window.
	later := e.now.Add(10 * time.Minute)
	sum := e.pass(t, later)
	if sum.Resolved != 1 || sum.Fired != 0 {
		t.Fatalf("resolving pass %+v", sum)
	}
	if got, _ := e.s.Rules.Rule(context.Background(), e.tm.AccountID, r.ID); got.State != alerting.StateOK {
		t.Fatalf("state after resolving %s", got.State)
	}
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{"in_app": 2})

	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", later.Add(-time.Minute), 4, 4)
	ev := e.evaluate(t, r.ID, later)
	if !ev.Fired || ev.State != alerting.StateFiring || *ev.Value != 1 {
		t.Fatalf("second firing %+v", ev)
	}
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{"in_app": 4})
}

// With several instances each transition fires exactly once: passes and
// on-demand evaluations racing from separate pools (separate "instances")
// create one firing's deliveries.
func TestTwoEvaluatorsRacingFireOnce(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 5)
	e.connect(t, alerting.ChannelSlack, slackURL)
	var rules []alerting.Rule
	for i := 0; i < 5; i++ {
		rules = append(rules, e.rule(t, errorRule(alerting.ChannelInApp, alerting.ChannelEmail, alerting.ChannelSlack)))
	}
	e.failing(t)

	var evaluators []*alerting.RuleEvaluator
	for i := 0; i < 2; i++ {
		db := testdb.OpenPostgres(t, e.url)
		evaluators = append(evaluators, alerting.NewRuleEvaluator(postgres.NewEvaluationStore(db), e.ch.Reads, db.TransitionConcurrency()))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := map[string]int{}
	for round := 0; round < 3; round++ {
		for _, ev := range evaluators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sum, err := ev.EvaluateAll(context.Background(), e.now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("pass: %v", err)
				}
				fired["pass"] += sum.Fired
			}()
			for _, r := range rules {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := ev.EvaluateRule(context.Background(), e.tm.AccountID, r.ID, e.now)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("evaluate: %v", err)
					}
					if res.State != alerting.StateFiring {
						t.Errorf("state %s after a racing evaluation", res.State)
					}
					if res.Fired {
						fired[r.ID]++
					}
				}()
			}
		}
	}
	wg.Wait()
	total := fired["pass"]
	for _, r := range rules {
		total += fired[r.ID]
		wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{"in_app": 5, "email": 5, "slack": 1})
	}
	if total != len(rules) {
		t.Fatalf("%d firings reported for %d rules: %v", total, len(rules), fired)
	}
}

// A metrics outage must neither fire nor resolve anything: the pass
// reports the failure and leaves every state as it was.
func TestMetricsOutageLeavesStatesUnchanged(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	down, err := clickhouse.Open(context.Background(), clickhouse.Config{Addr: []string{testenv.ClickHouseAddr(t)}, Database: e.ch.Database()})
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	ev := alerting.NewRuleEvaluator(postgres.NewEvaluationStore(e.db), down.Reads, e.db.TransitionConcurrency())
	sum, err := ev.EvaluateAll(context.Background(), e.now)
	if err == nil || sum.Failed != 1 || sum.Fired != 0 {
		t.Fatalf("pass with ClickHouse closed: %+v, %v", sum, err)
	}
	if _, err := ev.EvaluateRule(context.Background(), e.tm.AccountID, r.ID, e.now); err == nil {
		t.Fatal("evaluate with ClickHouse closed succeeded")
	}
	if got, _ := e.s.Rules.Rule(context.Background(), e.tm.AccountID, r.ID); got.State != alerting.StateOK {
		t.Fatalf("state %s", got.State)
	}
}

// A disabled rule is skipped by the pass; evaluating it on demand reports
// the value without firing.
func TestDisabledRuleIsMeasuredButNeverFires(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	c := errorRule(alerting.ChannelInApp)
	c.Enabled = ptr(false)
	r := e.rule(t, c)
	e.failing(t)
	if sum := e.pass(t, e.now); sum.Rules != 0 || sum.Fired != 0 {
		t.Fatalf("pass %+v", sum)
	}
	ev := e.evaluate(t, r.ID, e.now)
	if ev.Fired || ev.State != alerting.StateOK || ev.Value == nil || *ev.Value != 0.5 {
		t.Fatalf("evaluation %+v", ev)
	}
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{})
}

// Rules of several windows, metrics and tools across MCPs and accounts are
// measured in one pass, each against its own MCP and window.
func TestPassMeasuresEachRuleOnItsOwnWindowAndMCP(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	ctx := context.Background()
	other := testdb.NewTeam(t, e.db, 1)
	quietMCP := testdb.AddMCP(t, e.db, e.tm.AccountID)
	// The team's MCP: 10 search calls 3 minutes ago (2 errors), 20 other
	// items 30 minutes ago. The other account: 3 calls 2 minutes ago.
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "search", e.now.Add(-3*time.Minute), 10, 2)
	testdb.Events(t, e.ch, e.tm.AccountID, e.tm.MCPID, "", e.now.Add(-30*time.Minute), 20, 0)
	testdb.Events(t, e.ch, other.AccountID, other.MCPID, "", e.now.Add(-2*time.Minute), 3, 0)

	mk := func(accountID, mcpID, name, metric string, tool *string, cmp string, threshold float64, window int) alerting.Rule {
		r, err := e.s.Rules.CreateRule(ctx, accountID, mcpID, alerting.RuleCreate{Name: name, Metric: metric, Tool: tool,
			Comparator: cmp, Threshold: threshold, WindowMinutes: window, Channels: []string{alerting.ChannelInApp}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := map[string]string{}
	add := func(r alerting.Rule, state string) { want[r.ID] = state }
	add(mk(e.tm.AccountID, e.tm.MCPID, "5m calls >= 10", alerting.MetricCalls, nil, ">=", 10, 5), alerting.StateFiring)
	add(mk(e.tm.AccountID, e.tm.MCPID, "5m calls > 10", alerting.MetricCalls, nil, ">", 10, 5), alerting.StateOK)
	add(mk(e.tm.AccountID, e.tm.MCPID, "60m calls >= 30", alerting.MetricCalls, nil, ">=", 30, 60), alerting.StateFiring)
	add(mk(e.tm.AccountID, e.tm.MCPID, "tool error rate >= 0.2", alerting.MetricErrorRate, ptr("search"), ">=", 0.2, 5), alerting.StateFiring)
	add(mk(e.tm.AccountID, e.tm.MCPID, "other tool errors > 0", alerting.MetricErrors, ptr("fetch"), ">", 0, 60), alerting.StateOK)
	add(mk(e.tm.AccountID, e.tm.MCPID, "p95 > 100", alerting.MetricP95, nil, ">", 100, 5), alerting.StateFiring)
	add(mk(e.tm.AccountID, quietMCP, "silent MCP: calls < 1", alerting.MetricCalls, nil, "<", 1, 15), alerting.StateFiring)
	add(mk(e.tm.AccountID, quietMCP, "no latency: p95 < 1000", alerting.MetricP95, nil, "<", 1000, 15), alerting.StateOK)
	add(mk(other.AccountID, other.MCPID, "other calls >= 3", alerting.MetricCalls, nil, ">=", 3, 5), alerting.StateFiring)
	add(mk(other.AccountID, other.MCPID, "other 1m calls >= 3", alerting.MetricCalls, nil, ">=", 3, 1), alerting.StateOK)

	sum := e.pass(t, e.now)
	if sum.Rules != len(want) || sum.Fired != 6 || sum.Failed != 0 {
		t.Fatalf("pass %+v", sum)
	}
	e.wantStates(t, want)
}

// Deliveries outlive their rule and MCP: deleting the MCP removes its rules
// but not the inbox items, which keep the rule's name.
func TestDeliveriesOutliveDeletedRuleAndMCP(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	ctx := context.Background()
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	e.failing(t)
	e.evaluate(t, r.ID, e.now)
	testdb.Exec(t, e.db, `DELETE FROM mcps WHERE id = $1`, e.tm.MCPID)
	if _, err := e.s.Rules.Rule(ctx, e.tm.AccountID, r.ID); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
		t.Fatalf("rule after deleting its MCP: %v", err)
	}
	page, err := e.s.Inbox.Inbox(ctx, e.tm.AccountID, e.tm.Users[0], alerting.InboxFilter{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].RuleName != "Errors" || page.Items[0].RuleID != r.ID || page.Items[0].MCPID != e.tm.MCPID {
		t.Fatalf("inbox %+v, %v", page, err)
	}
}

// Evaluating another account's rule is not found, like every other read.
func TestEvaluateAnotherAccountsRuleIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	other := testdb.NewTeam(t, e.db, 1)
	for _, id := range []string{r.ID, "rul_nope", "bad id\x00"} {
		if _, err := e.s.Eval.EvaluateRule(context.Background(), other.AccountID, id, e.now); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
			t.Errorf("%q: %v", id, err)
		}
	}
}

// A firing decided on the rule as the pass loaded it is not written when
// the rule changed meanwhile: edited, disabled, deleted or already fired
// elsewhere. Only a transition measured on the current rule applies.
func TestStaleFiringIsNotApplied(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 2)
	ctx := context.Background()
	mk := func() alerting.Rule { return e.rule(t, errorRule(alerting.ChannelInApp)) }
	stale := []struct {
		name   string
		change func(r alerting.Rule)
	}{
		{"threshold edited", func(r alerting.Rule) {
			if _, err := e.s.Rules.UpdateRule(ctx, e.tm.AccountID, r.ID, alerting.RuleUpdate{Threshold: ptr(0.9)}); err != nil {
				t.Fatal(err)
			}
		}},
		{"tool edited", func(r alerting.Rule) {
			if _, err := e.s.Rules.UpdateRule(ctx, e.tm.AccountID, r.ID, alerting.RuleUpdate{Tool: alerting.NullableString{Set: true, Value: ptr("x")}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"disabled", func(r alerting.Rule) {
			if _, err := e.s.Rules.UpdateRule(ctx, e.tm.AccountID, r.ID, alerting.RuleUpdate{Enabled: ptr(false)}); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted", func(r alerting.Rule) {
			if err := e.s.Rules.DeleteRule(ctx, e.tm.AccountID, r.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"fired elsewhere", func(r alerting.Rule) {
			if ok, err := fireMeasured(ctx, e.s.Store, e.tm.AccountID, r, 0.5, e.now); !ok || err != nil {
				t.Fatalf("first firing: %v, %v", ok, err)
			}
		}},
	}
	for _, tc := range stale {
		t.Run(tc.name, func(t *testing.T) {
			r := mk()
			tc.change(r)
			before := len(deliveries(t, e.db, r.ID))
			ok, err := fireMeasured(ctx, e.s.Store, e.tm.AccountID, r, 0.5, e.now)
			if err != nil || ok {
				t.Fatalf("stale firing applied: %v, %v", ok, err)
			}
			if after := len(deliveries(t, e.db, r.ID)); after != before {
				t.Fatalf("deliveries %d -> %d", before, after)
			}
		})
	}
	// A rename keeps the state and the firing applies, with the new name.
	r := mk()
	if _, err := e.s.Rules.UpdateRule(ctx, e.tm.AccountID, r.ID, alerting.RuleUpdate{Name: ptr("Renamed")}); err != nil {
		t.Fatal(err)
	}
	if ok, err := fireMeasured(ctx, e.s.Store, e.tm.AccountID, r, 0.5, e.now); !ok || err != nil {
		t.Fatalf("firing after a rename: %v, %v", ok, err)
	}
	for _, d := range deliveries(t, e.db, r.ID) {
		if d.RuleName != "Renamed" {
			t.Fatalf("delivery names the old rule: %+v", d)
		}
	}
}

// While one instance holds the evaluator lock, another's pass is skipped
// (it would measure the same rules for nothing); it runs once the lock is
// free.
func TestPassSkipsWhileAnotherInstanceEvaluates(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	ctx := context.Background()
	r := e.rule(t, errorRule(alerting.ChannelInApp))
	e.failing(t)
	other := testdb.OpenPostgres(t, e.url)
	conn, err := other.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.LockEvaluator); err != nil {
		t.Fatal(err)
	}
	if sum := e.pass(t, e.now); !sum.Skipped || sum.Rules != 0 || sum.Fired != 0 {
		t.Fatalf("pass under another's lock: %+v", sum)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.LockEvaluator); err != nil {
		t.Fatal(err)
	}
	if sum := e.pass(t, e.now); sum.Skipped || sum.Fired != 1 {
		t.Fatalf("pass after the lock was released: %+v", sum)
	}
	wantCounts(t, deliveries(t, e.db, r.ID), map[string]int{"in_app": 1})
}
