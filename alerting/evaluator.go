package alerting

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// Evaluator evaluates rules: every minute (configurable) for all enabled
// rules, and on demand for POST /v1/rules/{ruleId}/evaluate. Rule values come
// from analytics.WindowReader (Rule.Value picks a rule's figure out of its
// MCP's window stats); alerting never sees ClickHouse. One evaluation of a
// rule is:
//
//  1. value, ok := rule.Value(stats of rule.Window(now)).
//  2. next, fired, resolved := Transition(rule.State, rule.Breached(value, ok)).
//  3. In one Postgres transaction that locks the rule row and re-checks its
//     state (so two instances, or a manual evaluation racing the ticker,
//     cannot both fire it): store next; when fired, set last_fired_at and
//     insert PlanFanOut(rule, value, members now, connected team channels)
//     as deliveries, each recording the rule's name.
//  4. resolved creates no deliveries (the contract names none).
//
// A metrics error leaves the rule's state unchanged: an outage of ClickHouse
// must neither fire nor resolve anything. A disabled rule is skipped by the
// ticker; evaluating it on demand measures and reports the value but does
// not change its state or fire.
type Evaluator interface {
	// EvaluateRule evaluates one rule at now and returns the outcome.
	// Returns ENOTFOUND, EUNAVAILABLE (metrics could not be read).
	EvaluateRule(ctx context.Context, accountID, ruleID string, now time.Time) (Evaluation, error)

	// EvaluateAll evaluates every enabled rule at now; one rule's failure
	// does not stop the others, and the returned error joins them. The
	// summary counts what the pass did, for the service's metrics.
	EvaluateAll(ctx context.Context, now time.Time) (PassSummary, error)
}

// PassSummary counts what one evaluation pass did.
type PassSummary struct {
	// Skipped is true when another instance was running a pass at the same
	// time, so this one left the rules to it.
	Skipped  bool
	Rules    int // enabled rules measured
	Fired    int // ok -> firing transitions this pass made
	Resolved int // firing -> ok transitions this pass made
	Failed   int // rules left unchanged because of an error
}

// EvalRule is a rule as the evaluator loads it: the domain rule plus its
// account, which the fan-out needs.
type EvalRule struct {
	Rule
	AccountID string
}

// FanOut plans the deliveries of a firing once the store has locked the
// rule row and read, at that moment, the rule as stored (its name and
// channels may have changed since the pass loaded it), the team and the
// connected team channels.
type FanOut func(rule Rule, audience []Member, connected map[string]bool) []PlannedDelivery

// EvaluationStore is the storage the rule pass needs. Every state write is
// conditional: it changes the rule only while the rule is still enabled, in
// the state r.State and defined as r (metric, tool, comparator, threshold,
// window), and reports false, writing nothing, when the rule changed under
// it (another instance or a manual evaluation applied the transition, or the
// rule was edited, disabled or deleted). That condition, not a lock, is what
// makes a firing happen once across instances.
type EvaluationStore interface {
	// WithPassLock runs fn while holding the lock that spares other
	// instances the duplicate work of a pass; ran is false, and fn is not
	// called, when another instance holds it.
	WithPassLock(ctx context.Context, fn func(context.Context) error) (ran bool, err error)

	// EnabledRules returns every enabled rule of every account.
	EnabledRules(ctx context.Context) ([]EvalRule, error)

	// EvalRule returns one rule of the account, enabled or not. Returns
	// ENOTFOUND.
	EvalRule(ctx context.Context, accountID, ruleID string) (EvalRule, error)

	// RuleState returns a rule's current state. Returns ENOTFOUND.
	RuleState(ctx context.Context, ruleID string) (string, error)

	// Resolve moves r from firing to ok.
	Resolve(ctx context.Context, r EvalRule) (applied bool, err error)

	// Fire moves r from ok to firing with last_fired_at = now and, in the
	// same transaction, inserts the deliveries plan returns, so a firing and
	// its deliveries commit together or not at all.
	Fire(ctx context.Context, r EvalRule, now time.Time, plan FanOut) (applied bool, err error)
}

// RuleEvaluator implements Evaluator on an EvaluationStore and an
// analytics.WindowReader.
type RuleEvaluator struct {
	store EvaluationStore
	stats analytics.WindowReader
	// concurrency bounds the transitions applied at once in a pass, each
	// holding one store connection.
	concurrency int
}

var _ Evaluator = (*RuleEvaluator)(nil)

// NewRuleEvaluator returns an evaluator applying up to concurrency
// transitions at once (at least 1).
func NewRuleEvaluator(store EvaluationStore, stats analytics.WindowReader, concurrency int) *RuleEvaluator {
	return &RuleEvaluator{store: store, stats: stats, concurrency: max(1, concurrency)}
}

// change is a state transition an evaluation decided on, with what it
// measured.
type change struct {
	rule     *EvalRule
	value    float64
	hasValue bool
	next     string
	fired    bool
}

// measure decides whether a rule changes state, given its MCP's stats.
func measure(r *EvalRule, stats map[string]analytics.WindowStat) (change, bool) {
	value, ok := r.Value(stats)
	next, fired, _ := Transition(r.State, r.Breached(value, ok))
	return change{rule: r, value: value, hasValue: ok, next: next, fired: fired}, next != r.State
}

// groupByWindow groups rules by window length, shortest first: one
// WindowStats call per length covers every MCP with a rule of that length.
func groupByWindow(rules []EvalRule) (windows []int, byWindow map[int][]*EvalRule) {
	byWindow = map[int][]*EvalRule{}
	for i := range rules {
		byWindow[rules[i].WindowMinutes] = append(byWindow[rules[i].WindowMinutes], &rules[i])
	}
	windows = make([]int, 0, len(byWindow))
	for w := range byWindow {
		windows = append(windows, w)
	}
	sort.Ints(windows)
	return windows, byWindow
}

// EvaluateAll implements Evaluator. Only rules whose state changes touch
// the store again.
func (e *RuleEvaluator) EvaluateAll(ctx context.Context, now time.Time) (PassSummary, error) {
	var sum PassSummary
	var errs []error
	ran, err := e.store.WithPassLock(ctx, func(ctx context.Context) error {
		rules, err := e.store.EnabledRules(ctx)
		if err != nil {
			return err
		}
		sum.Rules = len(rules)
		windows, byWindow := groupByWindow(rules)
		var changes []change
		for _, w := range windows {
			group := byWindow[w]
			stats, err := e.windowStats(ctx, group, now)
			if err != nil {
				sum.Failed += len(group)
				errs = append(errs, fmt.Errorf("window of %d minutes (%d rules): %w", w, len(group), err))
				continue
			}
			for _, r := range group {
				if c, ok := measure(r, stats[r.MCPID]); ok {
					changes = append(changes, c)
				}
			}
		}
		e.applyAll(ctx, changes, now, &sum, &errs)
		return nil
	})
	if err != nil {
		return sum, err
	}
	sum.Skipped = !ran
	return sum, errors.Join(errs...)
}

// applyAll applies the pass's transitions, up to e.concurrency at once,
// counting them in sum.
func (e *RuleEvaluator) applyAll(ctx context.Context, changes []change, now time.Time, sum *PassSummary, errs *[]error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.concurrency)
	for _, c := range changes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			applied, err := e.apply(ctx, c, now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				sum.Failed++
				*errs = append(*errs, fmt.Errorf("rule %s: %w", c.rule.ID, err))
			case applied && c.fired:
				sum.Fired++
			case applied:
				sum.Resolved++
			}
		}()
	}
	wg.Wait()
}

// windowStats measures the window of a group of rules of one length, for
// all their MCPs at once.
func (e *RuleEvaluator) windowStats(ctx context.Context, group []*EvalRule, now time.Time) (map[string]map[string]analytics.WindowStat, error) {
	seen := make(map[string]bool, len(group))
	mcps := make([]string, 0, len(group))
	for _, r := range group {
		if !seen[r.MCPID] {
			seen[r.MCPID] = true
			mcps = append(mcps, r.MCPID)
		}
	}
	from, to := group[0].Window(now)
	return e.stats.WindowStats(ctx, from, to, mcps)
}

// EvaluateRule implements Evaluator with the same transition code as the
// pass. When another evaluator changed the rule first, the answer reports
// the state it left, and fired is false.
func (e *RuleEvaluator) EvaluateRule(ctx context.Context, accountID, ruleID string, now time.Time) (Evaluation, error) {
	r, err := e.store.EvalRule(ctx, accountID, ruleID)
	if err != nil {
		return Evaluation{}, err
	}
	stats, err := e.windowStats(ctx, []*EvalRule{&r}, now)
	if err != nil {
		return Evaluation{}, err
	}
	c, changes := measure(&r, stats[r.MCPID])
	ev := Evaluation{State: r.State}
	if c.hasValue {
		v := c.value
		ev.Value = &v
	}
	if !r.Enabled || !changes {
		return ev, nil
	}
	applied, err := e.apply(ctx, c, now)
	if err != nil {
		return Evaluation{}, err
	}
	if applied {
		ev.State, ev.Fired = c.next, c.fired
		return ev, nil
	}
	ev.State, err = e.store.RuleState(ctx, ruleID)
	if err != nil {
		return Evaluation{}, err
	}
	return ev, nil
}

// apply writes one transition, reporting false when the rule changed under
// it, in which case nothing is written.
func (e *RuleEvaluator) apply(ctx context.Context, c change, now time.Time) (bool, error) {
	if !c.fired {
		return e.store.Resolve(ctx, *c.rule)
	}
	return e.store.Fire(ctx, *c.rule, now, func(rule Rule, audience []Member, connected map[string]bool) []PlannedDelivery {
		return PlanFanOut(rule, c.value, audience, connected)
	})
}
