package alerting

import (
	"context"
	"errors"
	"sort"
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

func (f *fakeStore) Resolve(_ context.Context, r EvalRule) (bool, error) {
	if f.resolve == nil {
		f.t.Fatalf("Resolve(%s) called", r.ID)
	}
	return f.resolve(r)
}

func (f *fakeStore) Fire(_ context.Context, r EvalRule, now time.Time, plan FanOut) (bool, error) {
	if f.fire == nil {
		f.t.Fatalf("Fire(%s) called", r.ID)
	}
	return f.fire(r, now, plan)
}

// fakeReader is an analytics.WindowReader of one function field.
type fakeReader func(from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error)

func (f fakeReader) WindowStats(_ context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error) {
	return f(from, to, mcpIDs)
}

func evalRule(id, mcp, state string, window int, metric, comp string, threshold float64) EvalRule {
	return EvalRule{AccountID: "acc", Rule: Rule{ID: id, MCPID: mcp, Name: "rule " + id, Metric: metric,
		Comparator: comp, Threshold: threshold, WindowMinutes: window, Enabled: true, State: state,
		Channels: []string{ChannelInApp, ChannelSlack}}}
}

var evalNow = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func TestPassReadsEachWindowOnceAndAppliesTransitions(t *testing.T) {
	rules := []EvalRule{
		evalRule("fire", "m1", StateOK, 5, MetricErrors, CompGT, 0),         // 2 errors > 0: fires
		evalRule("stay", "m2", StateOK, 5, MetricErrors, CompGT, 0),         // no items: stays ok
		evalRule("resolve", "m2", StateFiring, 60, MetricCalls, CompGT, 10), // 3 calls: resolves
		evalRule("keep", "m1", StateFiring, 60, MetricCalls, CompGT, 1),     // 9 calls: stays firing
		evalRule("tool", "m1", StateOK, 60, MetricCalls, CompGE, 4),         // tool t has 4: fires
	}
	rules[4].Tool = strp("t")
	var mu sync.Mutex
	var reads [][2]any
	reader := fakeReader(func(from, to time.Time, mcps []string) (map[string]map[string]analytics.WindowStat, error) {
		mu.Lock()
		sorted := append([]string(nil), mcps...)
		sort.Strings(sorted)
		reads = append(reads, [2]any{int(to.Sub(from) / time.Minute), sorted})
		mu.Unlock()
		if !to.Equal(evalNow) {
			t.Errorf("window ends %v, want now", to)
		}
		return map[string]map[string]analytics.WindowStat{
			"m1": {"": {Calls: 9, Errors: 2}, "t": {Calls: 4}},
			"m2": {"": {Calls: 3}},
		}, nil
	})
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
	if sum != (PassSummary{Rules: 5, Fired: 2, Resolved: 1}) {
		t.Errorf("summary %+v", sum)
	}
	// One read per distinct window, shortest first, each naming its MCPs once.
	if len(reads) != 2 || reads[0][0] != 5 || reads[1][0] != 60 {
		t.Fatalf("reads %v", reads)
	}
	if got := reads[0][1].([]string); len(got) != 2 || got[0] != "m1" || got[1] != "m2" {
		t.Errorf("5-minute read MCPs %v", got)
	}
	if len(fired) != 2 || fired["fire"] == nil || fired["tool"] == nil {
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

func TestPassLeavesRulesOfAFailedWindowAlone(t *testing.T) {
	rules := []EvalRule{
		evalRule("a", "m1", StateFiring, 5, MetricErrors, CompGT, 0),
		evalRule("b", "m1", StateOK, 10, MetricCalls, CompLT, 1),
	}
	reader := fakeReader(func(from, to time.Time, _ []string) (map[string]map[string]analytics.WindowStat, error) {
		if to.Sub(from) == 5*time.Minute {
			return nil, errors.New("clickhouse: unavailable")
		}
		return nil, nil // no items: calls 0 < 1 fires b
	})
	var fired []string
	store := &fakeStore{t: t,
		enabled: func() ([]EvalRule, error) { return rules, nil },
		fire: func(r EvalRule, _ time.Time, _ FanOut) (bool, error) {
			fired = append(fired, r.ID)
			return true, nil
		},
	}
	sum, err := NewRuleEvaluator(store, reader, 1).EvaluateAll(context.Background(), evalNow)
	if err == nil || sum.Failed != 1 || sum.Fired != 1 || sum.Resolved != 0 {
		t.Fatalf("summary %+v, error %v", sum, err)
	}
	if len(fired) != 1 || fired[0] != "b" {
		t.Errorf("fired %v: an unreadable window must neither fire nor resolve", fired)
	}
}

func TestPassCountsLostRacesAndStoreErrors(t *testing.T) {
	rules := []EvalRule{
		evalRule("lost", "m1", StateOK, 5, MetricErrors, CompGT, 0),
		evalRule("broken", "m1", StateOK, 5, MetricErrors, CompGT, 0),
	}
	reader := fakeReader(func(time.Time, time.Time, []string) (map[string]map[string]analytics.WindowStat, error) {
		return map[string]map[string]analytics.WindowStat{"m1": {"": {Calls: 1, Errors: 1}}}, nil
	})
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
	stats := fakeReader(func(time.Time, time.Time, []string) (map[string]map[string]analytics.WindowStat, error) {
		return map[string]map[string]analytics.WindowStat{"m1": {"": {Calls: 4, Errors: 1}}}, nil
	})
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
