package alerting

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// fakeStore is an EvaluationStore of function fields: each test sets what
// it needs; an unset field fails the test when called.
type fakeStore struct {
	t         *testing.T
	lock      func(ctx context.Context, fn func(context.Context) error) (bool, error)
	enabled   func() ([]EvalRule, error)
	evalRule  func(accountID, ruleID string) (EvalRule, error)
	ruleState func(ruleID string) (string, error)
	resolve   func(r EvalRule) (bool, error)
	fire      func(r EvalRule, now time.Time, plan FanOut) (bool, error)
	// transition, when set, takes every transition.
	transition func(r EvalRule, c StateChange, plan FanOut) (bool, int, error)
	// snoozeEnded takes the notices of firings a snooze muted.
	snoozeEnded func(r EvalRule, at time.Time, plan FanOut) (bool, int, error)
}

func (f *fakeStore) SnoozeEnded(_ context.Context, r EvalRule, at time.Time, plan FanOut) (bool, int, error) {
	if f.snoozeEnded == nil {
		f.t.Fatal("SnoozeEnded called")
	}
	return f.snoozeEnded(r, at, plan)
}

func (f *fakeStore) WithPassLock(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if f.lock == nil {
		return true, fn(ctx)
	}
	return f.lock(ctx, fn)
}

func (f *fakeStore) EnabledRules(context.Context) ([]EvalRule, error) {
	if f.enabled == nil {
		f.t.Fatal("EnabledRules called")
	}
	return f.enabled()
}

func (f *fakeStore) EvalRule(_ context.Context, accountID, ruleID string) (EvalRule, error) {
	if f.evalRule == nil {
		f.t.Fatal("EvalRule called")
	}
	return f.evalRule(accountID, ruleID)
}

func (f *fakeStore) RuleState(_ context.Context, ruleID string) (string, error) {
	if f.ruleState == nil {
		f.t.Fatal("RuleState called")
	}
	return f.ruleState(ruleID)
}

// Transition calls transition when set, else fire or resolve by the next
// state.
func (f *fakeStore) Transition(_ context.Context, r EvalRule, c StateChange, plan FanOut) (bool, int, error) {
	switch {
	case f.transition != nil:
		return f.transition(r, c, plan)
	case c.Next == StateFiring && f.fire != nil:
		ok, err := f.fire(r, c.At, plan)
		return ok, 0, err
	case c.Next == StateOK && f.resolve != nil:
		ok, err := f.resolve(r)
		return ok, 0, err
	}
	f.t.Fatalf("Transition(%s, %+v) called", r.ID, c)
	return false, 0, nil
}

// fakeReader is an analytics.WindowSetReader of function fields.
type fakeReader struct {
	sets func(to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error)
	one  func(from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error)
}

func (f fakeReader) WindowStats(_ context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error) {
	return f.one(from, to, mcpIDs)
}

func (f fakeReader) WindowSets(_ context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
	return f.sets(to, reqs)
}

// sameStats answers every requested window of every MCP with stats.
func sameStats(stats map[string]map[string]analytics.WindowStat) func(time.Time, map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
	return func(_ time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		out := map[string]map[int]map[string]analytics.WindowStat{}
		for mcp, r := range reqs {
			for _, w := range r.Minutes {
				if out[mcp] == nil {
					out[mcp] = map[int]map[string]analytics.WindowStat{}
				}
				out[mcp][w] = stats[mcp]
			}
		}
		return out, nil
	}
}

func evalRule(id, mcp, state string, window int, metric, comp string, threshold float64) EvalRule {
	return EvalRule{AccountID: "acc", Rule: Rule{ID: id, MCPID: mcp, Name: "rule " + id, Metric: metric,
		Comparator: comp, Threshold: threshold, WindowMinutes: window, Enabled: true, State: state,
		Channels: []string{ChannelInApp, ChannelSlack}}}
}

var evalNow = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func TestPassReadsEveryWindowInOneReadAndAppliesTransitions(t *testing.T) {
	rules := []EvalRule{
		evalRule("fire", "m1", StateOK, 5, MetricErrors, CompGT, 0),         // 2 errors > 0: fires
		evalRule("stay", "m2", StateOK, 5, MetricErrors, CompGT, 0),         // no items: stays ok
		evalRule("resolve", "m2", StateFiring, 60, MetricCalls, CompGT, 10), // 3 calls: resolves
		evalRule("keep", "m1", StateFiring, 60, MetricCalls, CompGT, 1),     // 9 calls: stays firing
		evalRule("tool", "m1", StateOK, 60, MetricCalls, CompGE, 4),         // tool t has 4: fires
		evalRule("slow", "m1", StateOK, 60, MetricP95, CompGT, 100),         // p95 120 > 100: fires
	}
	rules[4].Tool = strp("t")
	p95 := 120.0
	var mu sync.Mutex
	var reads []map[string]analytics.WindowRequest
	reader := fakeReader{sets: func(to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		mu.Lock()
		reads = append(reads, reqs)
		mu.Unlock()
		if !to.Equal(evalNow) {
			t.Errorf("windows end %v, want now", to)
		}
		return sameStats(map[string]map[string]analytics.WindowStat{
			"m1": {"": {Calls: 9, Errors: 2, P95Ms: &p95}, "t": {Calls: 4}},
			"m2": {"": {Calls: 3}},
		})(to, reqs)
	}}
	fired := map[string][]PlannedDelivery{}
	var resolved []string
	store := &fakeStore{t: t,
		enabled: func() ([]EvalRule, error) { return rules, nil },
		fire: func(r EvalRule, now time.Time, plan FanOut) (bool, error) {
			if !now.Equal(evalNow) {
				t.Errorf("fired at %v", now)
			}
			// The store hands the plan the team as it is at the moment of
			// firing; one member, slack connected.
			p := plan(r.Rule, []Member{{UserID: "u1", Prefs: DefaultPreferences()}}, map[string]bool{ChannelSlack: true})
			mu.Lock()
			fired[r.ID] = p
			mu.Unlock()
			return true, nil
		},
		resolve: func(r EvalRule) (bool, error) {
			mu.Lock()
			resolved = append(resolved, r.ID)
			mu.Unlock()
			return true, nil
		},
	}
	sum, err := NewRuleEvaluator(store, reader, 4).EvaluateAll(context.Background(), evalNow)
	if err != nil {
		t.Fatal(err)
	}
	if sum != (PassSummary{Rules: 6, Fired: 3, Resolved: 1}) {
		t.Errorf("summary %+v", sum)
	}
	// One read for every window of every MCP; percentiles only where a
	// p95 rule needs them.
	if len(reads) != 1 {
		t.Fatalf("%d reads, want 1", len(reads))
	}
	m1, m2 := reads[0]["m1"], reads[0]["m2"]
	sort.Ints(m1.Minutes)
	sort.Ints(m2.Minutes)
	if !slices.Equal(m1.Minutes, []int{5, 60}) || !slices.Equal(m1.DetailMinutes, []int{60}) ||
		!slices.Equal(m2.Minutes, []int{5, 60}) || len(m2.DetailMinutes) != 0 {
		t.Errorf("requests %+v", reads[0])
	}
	if len(fired) != 3 || fired["fire"] == nil || fired["tool"] == nil || fired["slow"] == nil {
		t.Fatalf("fired %v", fired)
	}
	// in_app for u1 (delivered), email for u1 (queued), slack (queued).
	if p := fired["fire"]; len(p) != 2 || p[0].Channel != ChannelInApp || p[0].Status != StatusDelivered || p[1].Channel != ChannelSlack {
		t.Errorf("plan %+v", p)
	}
	if len(resolved) != 1 || resolved[0] != "resolve" {
		t.Errorf("resolved %v", resolved)
	}
}

func TestPassLeavesRulesOfAFailedReadAlone(t *testing.T) {
	// Two accounts, read in separate chunks; the first read fails.
	rules := []EvalRule{
		evalRule("a", "m1", StateFiring, 5, MetricErrors, CompGT, 0),
		evalRule("b", "m2", StateOK, 10, MetricCalls, CompLT, 1),
	}
	rules[1].AccountID = "acc-2"
	calls := 0
	reader := fakeReader{sets: func(to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		calls++
		if _, ok := reqs["m1"]; ok {
			return nil, errors.New("clickhouse: unavailable")
		}
		return nil, nil // no items: calls 0 < 1 fires b
	}}
	var fired []string
	store := &fakeStore{t: t,
		enabled: func() ([]EvalRule, error) { return rules, nil },
		fire: func(r EvalRule, _ time.Time, _ FanOut) (bool, error) {
			fired = append(fired, r.ID)
			return true, nil
		},
	}
	ev := NewRuleEvaluator(store, reader, 1)
	ev.ChunkRules = 1
	sum, err := ev.EvaluateAll(context.Background(), evalNow)
	if err == nil || sum.Failed != 1 || sum.Fired != 1 || sum.Resolved != 0 || calls != 2 {
		t.Fatalf("summary %+v, error %v, %d reads", sum, err, calls)
	}
	if len(fired) != 1 || fired[0] != "b" {
		t.Errorf("fired %v: an unreadable window must neither fire nor resolve", fired)
	}
}

// Accounts are taken round-robin: a pass out of time leaves the other
// accounts' rules to the next pass, which starts with them; a whole pass
// moves the start one account on.
func TestPassIsFairAcrossAccounts(t *testing.T) {
	var rules []EvalRule
	for _, a := range []string{"acc-a", "acc-b", "acc-c"} {
		r := evalRule(a+"-rule", "mcp-"+a, StateOK, 5, MetricCalls, CompLT, 0) // never breached
		r.AccountID = a
		rules = append(rules, r)
	}
	var order []string
	reader := fakeReader{sets: func(to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		for mcp := range reqs {
			order = append(order, strings.TrimPrefix(mcp, "mcp-"))
		}
		time.Sleep(30 * time.Millisecond) // a slow account
		return nil, nil
	}}
	store := &fakeStore{t: t, enabled: func() ([]EvalRule, error) { return rules, nil }}
	ev := NewRuleEvaluator(store, reader, 1)
	ev.ChunkRules = 1
	ev.Budget = 10 * time.Millisecond // room for one chunk a pass
	for pass := 0; pass < 3; pass++ {
		sum, err := ev.EvaluateAll(context.Background(), evalNow)
		if err != nil || sum.Deferred != 2 || sum.Rules != 3 {
			t.Fatalf("pass %d: %+v %v", pass, sum, err)
		}
	}
	if strings.Join(order, ",") != "acc-a,acc-b,acc-c" {
		t.Fatalf("accounts measured in order %v, want each in turn", order)
	}
	order = nil
	ev.Budget = 0
	for pass := 0; pass < 2; pass++ {
		if sum, err := ev.EvaluateAll(context.Background(), evalNow); err != nil || sum.Deferred != 0 {
			t.Fatalf("unbounded pass: %+v %v", sum, err)
		}
	}
	if strings.Join(order, ",") != "acc-a,acc-b,acc-c,acc-b,acc-c,acc-a" {
		t.Fatalf("whole passes measured %v, want the start moving on", order)
	}
}

func TestPassCountsLostRacesAndStoreErrors(t *testing.T) {
	rules := []EvalRule{
		evalRule("lost", "m1", StateOK, 5, MetricErrors, CompGT, 0),
		evalRule("broken", "m1", StateOK, 5, MetricErrors, CompGT, 0),
	}
	reader := fakeReader{sets: sameStats(map[string]map[string]analytics.WindowStat{"m1": {"": {Calls: 1, Errors: 1}}})}
	store := &fakeStore{t: t,
		enabled: func() ([]EvalRule, error) { return rules, nil },
		fire: func(r EvalRule, _ time.Time, _ FanOut) (bool, error) {
			if r.ID == "broken" {
				return false, errors.New("postgres: connection reset")
			}
			return false, nil // another instance fired it first
		},
	}
	sum, err := NewRuleEvaluator(store, reader, 2).EvaluateAll(context.Background(), evalNow)
	if err == nil || sum != (PassSummary{Rules: 2, Failed: 1}) {
		t.Fatalf("summary %+v, error %v", sum, err)
	}
}

func TestPassSkipsWhenAnotherInstanceHoldsTheLock(t *testing.T) {
	store := &fakeStore{t: t, lock: func(context.Context, func(context.Context) error) (bool, error) { return false, nil }}
	sum, err := NewRuleEvaluator(store, nil, 1).EvaluateAll(context.Background(), evalNow)
	if err != nil || !sum.Skipped || sum.Rules != 0 {
		t.Fatalf("summary %+v, error %v", sum, err)
	}
}

func TestEvaluateRule(t *testing.T) {
	stats := fakeReader{one: func(time.Time, time.Time, []string) (map[string]map[string]analytics.WindowStat, error) {
		return map[string]map[string]analytics.WindowStat{"m1": {"": {Calls: 4, Errors: 1}}}, nil
	}}
	t.Run("fires", func(t *testing.T) {
		store := &fakeStore{t: t,
			evalRule: func(string, string) (EvalRule, error) {
				return evalRule("r", "m1", StateOK, 5, MetricErrorRate, CompGE, 0.25), nil
			},
			fire: func(EvalRule, time.Time, FanOut) (bool, error) { return true, nil },
		}
		ev, err := NewRuleEvaluator(store, stats, 1).EvaluateRule(context.Background(), "acc", "r", evalNow)
		if err != nil || ev.State != StateFiring || !ev.Fired || ev.Value == nil || *ev.Value != 0.25 {
			t.Fatalf("%+v %v", ev, err)
		}
	})
	t.Run("disabled measures only", func(t *testing.T) {
		store := &fakeStore{t: t, evalRule: func(string, string) (EvalRule, error) {
			r := evalRule("r", "m1", StateOK, 5, MetricErrors, CompGT, 0)
			r.Enabled = false
			return r, nil
		}}
		ev, err := NewRuleEvaluator(store, stats, 1).EvaluateRule(context.Background(), "acc", "r", evalNow)
		if err != nil || ev.State != StateOK || ev.Fired || ev.Value == nil || *ev.Value != 1 {
			t.Fatalf("%+v %v", ev, err)
		}
	})
	t.Run("lost race reports the stored state", func(t *testing.T) {
		store := &fakeStore{t: t,
			evalRule: func(string, string) (EvalRule, error) {
				return evalRule("r", "m1", StateOK, 5, MetricErrors, CompGT, 0), nil
			},
			fire:      func(EvalRule, time.Time, FanOut) (bool, error) { return false, nil },
			ruleState: func(string) (string, error) { return StateFiring, nil },
		}
		ev, err := NewRuleEvaluator(store, stats, 1).EvaluateRule(context.Background(), "acc", "r", evalNow)
		if err != nil || ev.State != StateFiring || ev.Fired {
			t.Fatalf("%+v %v", ev, err)
		}
	})
	t.Run("not found passes through", func(t *testing.T) {
		notFound := errors.New("not found")
		store := &fakeStore{t: t, evalRule: func(string, string) (EvalRule, error) { return EvalRule{}, notFound }}
		if _, err := NewRuleEvaluator(store, stats, 1).EvaluateRule(context.Background(), "acc", "r", evalNow); !errors.Is(err, notFound) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestPassReadsBaselineWindowsAWeekEarlier(t *testing.T) {
	rules := []EvalRule{
		evalRule("half", "m1", StateOK, 60, MetricCalls, CompLT, 0.5),        // 40 vs 100: fires
		evalRule("plain", "m1", StateOK, 5, MetricCalls, CompGT, 1000),       // stays ok
		evalRule("zero", "m2", StateFiring, 60, MetricCalls, CompLT, 0.5),    // baseline 0: holds firing
		evalRule("users", "m2", StateOK, 60, MetricUsers, CompGT, 2),         // 3 users vs 1: fires
		evalRule("quiet", "m3", StateFiring, 30, MetricErrorRate, CompGT, 0), // under min_calls: holds firing
	}
	for _, i := range []int{0, 2, 3} {
		rules[i].Baseline = strp(BaselineWeekAgo)
	}
	rules[4].MinCalls = 10
	var reads []time.Time
	var baselineReqs map[string]analytics.WindowRequest
	reader := fakeReader{sets: func(to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		reads = append(reads, to)
		if to.Equal(evalNow) {
			return sameStats(map[string]map[string]analytics.WindowStat{
				"m1": {"": {Calls: 40}},
				"m2": {"": {Calls: 7, Users: 3}},
				"m3": {"": {Calls: 3, Errors: 3}},
			})(to, reqs)
		}
		baselineReqs = reqs
		return sameStats(map[string]map[string]analytics.WindowStat{
			"m1": {"": {Calls: 100}},
			"m2": {"": {Calls: 0, Users: 1}},
		})(to, reqs)
	}}
	var changes []string
	store := &fakeStore{t: t,
		enabled: func() ([]EvalRule, error) { return rules, nil },
		transition: func(r EvalRule, c StateChange, plan FanOut) (bool, int, error) {
			v := "null"
			if c.Value != nil {
				v = formatNumber(*c.Value, 2)
			}
			changes = append(changes, r.ID+" "+c.EventKind()+" "+v)
			return true, len(plan(r.Rule, []Member{{UserID: "u1", Prefs: DefaultPreferences()}}, nil)), nil
		},
	}
	sum, err := NewRuleEvaluator(store, reader, 1).EvaluateAll(context.Background(), evalNow)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(changes)
	if want := []string{"half fired 0.4", "users fired 3"}; !slices.Equal(changes, want) {
		t.Errorf("changes %v, want %v", changes, want)
	}
	if sum.Fired != 2 || sum.Resolved != 0 {
		t.Errorf("summary %+v", sum)
	}
	if len(reads) != 2 || !reads[1].Equal(evalNow.Add(-7*24*time.Hour)) {
		t.Fatalf("reads at %v", reads)
	}
	// The baseline read asks only for the baseline rules' windows.
	if _, ok := baselineReqs["m3"]; ok || !slices.Equal(baselineReqs["m1"].Minutes, []int{60}) ||
		!slices.Equal(baselineReqs["m2"].DetailMinutes, []int{60}) {
		t.Errorf("baseline requests %+v", baselineReqs)
	}
}

func TestPlanTransition(t *testing.T) {
	team := []Member{{UserID: "u1", Prefs: DefaultPreferences()}, {UserID: "u2", Prefs: Preferences{InApp: true}}}
	connected := map[string]bool{ChannelSlack: true}
	r := evalRule("r", "m", StateOK, 5, MetricErrorRate, CompGT, 0.1).Rule
	r.Channels = []string{ChannelInApp, ChannelEmail, ChannelSlack}
	rd := Reading{Value: 0.02, HasValue: true}
	if p := PlanTransition(r, false, rd, evalNow, team, connected); p != nil {
		t.Errorf("a resolve without notify_on_resolve planned %+v", p)
	}
	r.NotifyOnResolve = true
	p := PlanTransition(r, false, rd, evalNow, team, connected)
	fire := PlanTransition(r, true, Reading{Value: 0.5, HasValue: true}, evalNow, team, connected)
	// Same audience as a firing: in_app u1, email u1, in_app u2, slack.
	if len(p) != 4 || len(fire) != 4 {
		t.Fatalf("resolve plan %+v, firing plan %+v", p, fire)
	}
	for i := range p {
		if p[i].Channel != fire[i].Channel || p[i].Status != fire[i].Status || !equalStringPtr(p[i].RecipientUserID, fire[i].RecipientUserID) {
			t.Errorf("resolve delivery %d %+v differs from firing %+v", i, p[i], fire[i])
		}
	}
	if p[0].Title != "Resolved: rule r (error rate 2%)" || !strings.Contains(p[0].Body, "no longer breaking the rule (> 10%)") {
		t.Errorf("resolve text %q / %q", p[0].Title, p[0].Body)
	}
	r.SnoozedUntil = timep(evalNow.Add(time.Minute))
	if p := PlanTransition(r, true, rd, evalNow, team, connected); p != nil {
		t.Errorf("a snoozed firing planned %+v", p)
	}
	if p := PlanTransition(r, false, rd, evalNow, team, connected); p != nil {
		t.Errorf("a snoozed resolve planned %+v", p)
	}
	if p := PlanTransition(r, true, rd, evalNow.Add(time.Minute), team, connected); len(p) != 4 {
		t.Errorf("a snooze ending at now still muted: %+v", p)
	}
}

func TestEvaluateRuleWithBaselineAndSnooze(t *testing.T) {
	r := evalRule("r", "m", StateOK, 60, MetricCalls, CompLT, 0.5)
	r.Baseline = strp(BaselineWeekAgo)
	r.SnoozedUntil = timep(evalNow.Add(time.Hour))
	var windows [][2]time.Time
	reader := fakeReader{one: func(from, to time.Time, _ []string) (map[string]map[string]analytics.WindowStat, error) {
		windows = append(windows, [2]time.Time{from, to})
		if to.Equal(evalNow) {
			return map[string]map[string]analytics.WindowStat{"m": {"": {Calls: 10}}}, nil
		}
		return map[string]map[string]analytics.WindowStat{"m": {"": {Calls: 50}}}, nil
	}}
	store := &fakeStore{t: t,
		evalRule: func(_, _ string) (EvalRule, error) { return r, nil },
		transition: func(r EvalRule, c StateChange, plan FanOut) (bool, int, error) {
			return true, len(plan(r.Rule, []Member{{UserID: "u1", Prefs: DefaultPreferences()}}, nil)), nil
		},
	}
	ev, err := NewRuleEvaluator(store, reader, 1).EvaluateRule(context.Background(), "acc", "r", evalNow)
	if err != nil {
		t.Fatal(err)
	}
	if ev.State != StateFiring || !ev.Fired || ev.Resolved || ev.Value == nil || *ev.Value != 0.2 ||
		ev.BaselineValue == nil || *ev.BaselineValue != 50 || ev.Calls != 10 || ev.Deliveries != 0 {
		t.Errorf("evaluation %+v", ev)
	}
	week := 7 * 24 * time.Hour
	if len(windows) != 2 || !windows[1][0].Equal(evalNow.Add(-time.Hour-week)) || !windows[1][1].Equal(evalNow.Add(-week)) {
		t.Errorf("windows %v", windows)
	}
}
