package alerting

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// fakeSLOs is an SLOEvalStore and an analytics.SLIReader of function
// fields.
type fakeSLOs struct {
	enabled    func() ([]EvalSLO, error)
	counts     func(qs []analytics.SLIQuery) ([]analytics.SLIReading, error)
	transition func(s EvalSLO, c SLOChange) (bool, int, error)
}

func (f fakeSLOs) EnabledSLOs(context.Context) ([]EvalSLO, error) { return f.enabled() }

func (f fakeSLOs) TransitionSLO(_ context.Context, s EvalSLO, c SLOChange, _ func(SLO, []Member, map[string]bool) []PlannedDelivery) (bool, int, error) {
	return f.transition(s, c)
}

func (f fakeSLOs) SLICounts(_ context.Context, _ time.Time, _, _ []int, qs []analytics.SLIQuery) ([]analytics.SLIReading, error) {
	return f.counts(qs)
}

func (f fakeSLOs) SLISeries(context.Context, time.Time, analytics.SLIQuery) ([]analytics.SLIPoint, error) {
	return nil, nil
}

// TestRulesAndSLOsShareThePassLock: the SLOs are evaluated under the
// rules' pass lock, their read at the same time as the rules' (each waits
// for the other's to start), and not at all by an instance that did not
// get the lock; the summary counts both.
func TestRulesAndSLOsShareThePassLock(t *testing.T) {
	var held atomic.Bool
	store := &fakeStore{t: t,
		lock: func(ctx context.Context, fn func(context.Context) error) (bool, error) {
			held.Store(true)
			defer held.Store(false)
			return true, fn(ctx)
		},
		enabled: func() ([]EvalRule, error) {
			return []EvalRule{evalRule("r", "m1", StateOK, 5, MetricErrors, CompGT, 0)}, nil
		},
	}
	ruleRead, sliRead := make(chan struct{}), make(chan struct{})
	meet := func(mine, other chan struct{}) {
		close(mine)
		select {
		case <-other:
		case <-time.After(5 * time.Second):
			t.Error("the rules' and the SLOs' reads did not overlap")
		}
	}
	reader := fakeReader{sets: func(time.Time, map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		meet(ruleRead, sliRead)
		return nil, nil // no items: the rule stays ok
	}}
	slo := EvalSLO{AccountID: "acc", SLO: SLO{ID: "slo", MCPID: "m1", Name: "Search succeeds", Kind: SLOAvailability, Objective: 0.99,
		WindowDays: 28, Channels: []string{ChannelInApp}, Severity: SeverityTicket, Enabled: true, State: SLOStateOK}}
	var transitions int
	slos := fakeSLOs{
		enabled: func() ([]EvalSLO, error) {
			if !held.Load() {
				t.Error("SLOs read outside the pass lock")
			}
			return []EvalSLO{slo}, nil
		},
		counts: func(qs []analytics.SLIQuery) ([]analytics.SLIReading, error) {
			meet(sliRead, ruleRead)
			bad := analytics.SLICounts{Total: 100, Bad: 50} // every window burns 50x: page
			rd := analytics.SLIReading{Minutes: map[int]analytics.SLICounts{}, Hours: map[int]analytics.SLICounts{}}
			for _, m := range SLOMinutes() {
				rd.Minutes[m] = bad
			}
			for _, h := range append(SLOHours(), 28*24) {
				rd.Hours[h] = bad
			}
			return []analytics.SLIReading{rd}, nil
		},
		transition: func(s EvalSLO, c SLOChange) (bool, int, error) {
			if !held.Load() {
				t.Error("SLO changed outside the pass lock")
			}
			if s.ID != "slo" || c.Next != SLOStatePage || !c.Alerted {
				t.Errorf("SLO change %s %+v", s.ID, c)
			}
			transitions++
			return true, 1, nil
		},
	}
	p := RulesAndSLOs{RuleEvaluator: NewRuleEvaluator(store, reader, 1), SLOs: &SLOEvaluator{Store: slos, SLI: slos}}
	sum, err := p.EvaluateAll(context.Background(), evalNow)
	if err != nil || sum.Skipped || sum.Rules != 1 || sum.SLOs != 1 || sum.SLOAlerts != 1 || transitions != 1 {
		t.Fatalf("pass %+v, %v (%d SLO transitions)", sum, err, transitions)
	}

	// Another instance holds the lock: neither rules nor SLOs are read.
	store.lock = func(context.Context, func(context.Context) error) (bool, error) { return false, nil }
	store.enabled = func() ([]EvalRule, error) { t.Error("rules read without the lock"); return nil, nil }
	slos.enabled = func() ([]EvalSLO, error) { t.Error("SLOs read without the lock"); return nil, nil }
	p.SLOs.Store = slos
	if sum, err := p.EvaluateAll(context.Background(), evalNow); err != nil || !sum.Skipped || sum.SLOs != 0 {
		t.Fatalf("skipped pass %+v, %v", sum, err)
	}

	// The lock cannot be taken (the database is down): a failed pass,
	// not a skipped one, so the evaluator's metrics count it as failed.
	down := errors.New("unavailable: the database is unavailable")
	store.lock = func(context.Context, func(context.Context) error) (bool, error) { return false, down }
	if sum, err := p.EvaluateAll(context.Background(), evalNow); !errors.Is(err, down) || sum.Skipped {
		t.Fatalf("pass without the database %+v, %v; want failed, not skipped", sum, err)
	}
}
