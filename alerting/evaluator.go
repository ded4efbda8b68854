package alerting

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// Evaluator evaluates rules: every minute (configurable) for all enabled
// rules, and on demand for POST /v1/rules/{ruleId}/evaluate. Rule values come
// from analytics.WindowReader (Rule.Read judges a rule on its MCP's window
// stats, and on the same window a week earlier for a week_ago baseline);
// alerting never sees ClickHouse. One evaluation of a rule is:
//
//  1. reading := rule.Read(stats of the rule's window ending at now, stats of
//     the baseline window), read for many rules at once
//     (analytics.WindowSetReader.WindowSets).
//  2. A reading that holds (baseline 0) keeps the state; otherwise
//     next, fired, resolved := Transition(rule.State, reading.Breached).
//  3. In one Postgres transaction that locks the rule row and re-checks its
//     state (so two instances, or a manual evaluation racing the ticker,
//     cannot both apply it): store next (and last_fired_at when fired),
//     record the history event, and insert the deliveries: PlanFanOut on a
//     firing, PlanResolveFanOut on a resolve of a rule with
//     notify_on_resolve, none while the rule is snoozed. The rule's
//     channels, snooze and notify_on_resolve are those stored at that
//     moment.
//  4. A rule that fired while snoozed and is still firing once the snooze
//     has ended gets the firing's deliveries then, once
//     (Rule.SnoozeEnded, EvaluationStore.SnoozeEnded).
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
	// Notices counts the firings muted by a snooze that this pass
	// notified once the snooze ended.
	Notices int
	Failed  int // rules left unchanged because of an error
	// Deferred counts rules the pass left to the next one when it ran out
	// of its time budget (the next pass starts with their accounts).
	Deferred int
	// SLOs counts the enabled SLOs measured and SLOAlerts the pages and
	// tickets raised (RulesAndSLOs).
	SLOs, SLOAlerts int
}

// EvalRule is a rule as the evaluator loads it: the domain rule plus its
// account, which the fan-out needs.
type EvalRule struct {
	Rule
	AccountID string
	// MCPCreatedAt is when the rule's MCP was created: a seasonal rule's
	// history starts then (ReadSeasonal).
	MCPCreatedAt time.Time
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

	// SnoozeEnded delivers, at most once, the notice of a firing that
	// came while r was snoozed, once the snooze has ended (Rule.SnoozeEnded
	// said so at at): in one transaction it clears the ended snooze, only
	// while r is still firing, defined as measured, with the same
	// snooze and last firing, and inserts the deliveries plan returns
	// unless that firing already created deliveries (it came before the
	// snooze began). It reports whether it sent the notice (false when
	// the rule changed under it or the firing was no snooze's) and how many
	// deliveries it inserted.
	SnoozeEnded(ctx context.Context, r EvalRule, at time.Time, plan FanOut) (applied bool, deliveries int, err error)

	// Transition moves r from r.State to c.Next (setting last_fired_at =
	// c.At when c.Next is firing) and, in the same transaction, records the
	// history event (fired or resolved, c.Value, the threshold, c.At) and
	// inserts the deliveries plan returns, so a transition, its history and
	// its deliveries commit together or not at all. It reports how many
	// deliveries it inserted.
	Transition(ctx context.Context, r EvalRule, c StateChange, plan FanOut) (applied bool, deliveries int, err error)
}

// StateChange is a transition an evaluation applies: the next state, the
// value it measured (nil when none) and when.
type StateChange struct {
	Next  string
	Value *float64
	At    time.Time
	// Expected is a seasonal rule's band, kept in its history.
	Expected *Band
}

// EventKind is the history event a transition to next records.
func (c StateChange) EventKind() string {
	if c.Next == StateFiring {
		return EventFired
	}
	return EventResolved
}

// RuleEvaluator implements Evaluator on an EvaluationStore and an
// analytics.WindowSetReader.
//
// A pass is fair across accounts: rules are taken account by account in
// chunks of about ChunkRules rules, each chunk measured with one read of
// every window its MCPs need; the accounts are taken round-robin, starting
// one further on each pass, and a pass that runs out of its time budget
// leaves the remaining accounts to the next pass, which starts with them.
// So no account's rules can keep another account's from being evaluated.
type RuleEvaluator struct {
	store EvaluationStore
	stats analytics.WindowSetReader
	// concurrency bounds the transitions applied at once in a pass, each
	// holding one store connection.
	concurrency int
	// Budget bounds the time one pass spends measuring; 0: none.
	Budget time.Duration
	// Changes, when set, counts the tool inventory changes of rules on
	// tool_changes; without it they measure 0.
	Changes analytics.ToolChangeCounter
	// Probes, when set, gives probe_down rules their value and calls
	// rules with < or <= their probe note (probe_rule.go).
	Probes analytics.ProbeStatReader
	// Repeats, when set, counts the repeated calls of rules on
	// repeated_calls (evaluator_counts.go); without it they measure 0.
	Repeats analytics.RepeatCounter
	// Unknown, when set, counts the calls of unknown tools of rules on
	// unknown_tool_calls (evaluator_counts.go); without it they measure 0.
	Unknown analytics.UnknownToolCounter
	// ChangeList and ChangeImpact, when set, name the changes and the
	// clients they hit in the messages of tool_changes rules.
	ChangeList   analytics.ToolChangeStore
	ChangeImpact analytics.ToolChangeImpactReader
	// Releases, when set, reads the previous release's figures for the
	// rules with baseline previous_release (without it they hold).
	Releases PreviousReleaseReader
	// ChunkRules is how many rules one read measures (whole accounts, so
	// a chunk may hold more); default 10,000. A chunk's statements cost
	// about the same whether they name 500 or 1,000 MCPs (their reads of
	// events are most of it, and MCPs' rows share granules, the week-ago
	// day's as well as today's), so fewer, larger chunks cost ClickHouse
	// less (see docs/benchmarks.md); a pass of 10,000 rules is one chunk.
	ChunkRules int
	// ReadAhead is how many chunks a pass reads at once, the chunks
	// after the one being applied, when the reader is an
	// analytics.WindowSetBatchReader (which takes concurrent reads);
	// default 3. A pass out of its budget still finishes the chunks it
	// has started reading.
	ReadAhead int

	mu sync.Mutex
	// next is the account the next pass starts with.
	next string
}

var _ Evaluator = (*RuleEvaluator)(nil)

// NewRuleEvaluator returns an evaluator applying up to concurrency
// transitions at once (at least 1).
func NewRuleEvaluator(store EvaluationStore, stats analytics.WindowSetReader, concurrency int) *RuleEvaluator {
	return &RuleEvaluator{store: store, stats: stats, concurrency: max(1, concurrency), ChunkRules: 10000, ReadAhead: 3}
}

// change is a state transition an evaluation decided on, with what it
// measured.
type change struct {
	rule    *EvalRule
	reading Reading
	next    string
	fired   bool
	// notice: no transition, but the notice of a firing a snooze muted
	// (Rule.SnoozeEnded).
	notice bool
}

// measure decides whether an evaluation at now changes a rule's state, or
// owes the notice of a firing its snooze muted, given its MCP's stats over
// the rule's window and, for a rule with a baseline, over the baseline
// window.
func measure(r *EvalRule, now time.Time, cur map[string]analytics.WindowStat, past []map[string]analytics.WindowStat) (change, bool) {
	rd := r.readAt(now, cur, past)
	if rd.Hold {
		return change{rule: r, reading: rd, next: r.State}, false
	}
	next, fired, _ := Transition(r.State, rd.Breached)
	if next == r.State && r.SnoozeEnded(now, rd) {
		return change{rule: r, reading: rd, next: next, notice: true}, true
	}
	return change{rule: r, reading: rd, next: next, fired: fired}, next != r.State
}

// byAccount groups rules by account, accounts in id order.
func byAccount(rules []EvalRule) (accounts []string, groups map[string][]*EvalRule) {
	groups = map[string][]*EvalRule{}
	for i := range rules {
		a := rules[i].AccountID
		if groups[a] == nil {
			accounts = append(accounts, a)
		}
		groups[a] = append(groups[a], &rules[i])
	}
	sort.Strings(accounts)
	return accounts, groups
}

// EvaluateAll implements Evaluator. Only rules whose state changes touch
// the store again.
func (e *RuleEvaluator) EvaluateAll(ctx context.Context, now time.Time) (PassSummary, error) {
	var sum PassSummary
	var errs []error
	ran, err := e.store.WithPassLock(ctx, func(ctx context.Context) error { return e.pass(ctx, now, &sum, &errs) })
	if err != nil {
		return sum, err
	}
	sum.Skipped = !ran
	return sum, errors.Join(errs...)
}

// pass is one pass of EvaluateAll, run under the pass lock: its counts go
// to sum, the errors of single rules and chunks to errs.
func (e *RuleEvaluator) pass(ctx context.Context, now time.Time, sum *PassSummary, errs *[]error) error {
	rules, err := e.store.EnabledRules(ctx)
	if err != nil {
		return err
	}
	sum.Rules = len(rules)
	accounts, groups := byAccount(rules)
	if len(accounts) == 0 {
		return nil
	}
	order := e.passOrder(accounts)
	started := time.Now()
	resume := ""
	// The chunks are read ahead of the one being applied, up to
	// readAhead at once (see ReadAhead); the budget is checked as a
	// chunk's turn to be read comes.
	readAhead := e.readAhead()
	reads := make(chan *chunkRead, readAhead)
	slots := make(chan struct{}, readAhead)
	deferred := 0
	go func() {
		defer close(reads)
		for i := 0; i < len(order); {
			slots <- struct{}{}
			// At least one chunk a pass, so every pass makes progress.
			if i > 0 && e.Budget > 0 && time.Since(started) > e.Budget {
				resume = order[i]
				for _, a := range order[i:] {
					deferred += len(groups[a])
				}
				return
			}
			cr := &chunkRead{done: make(chan struct{})}
			for ; i < len(order) && (len(cr.rules) == 0 || len(cr.rules)+len(groups[order[i]]) <= e.ChunkRules); i++ {
				cr.rules = append(cr.rules, groups[order[i]]...)
			}
			go func() {
				defer close(cr.done)
				cr.cur, cr.prev, cr.older, cr.err = e.readChunk(ctx, now, cr.rules)
				if cr.err == nil {
					cr.release, cr.err = e.readReleases(ctx, cr.rules)
				}
			}()
			reads <- cr
		}
	}()
	for cr := range reads {
		<-cr.done
		if cr.err != nil {
			sum.Failed += len(cr.rules)
			*errs = append(*errs, fmt.Errorf("rules of %d accounts (%d rules): %w", len(groups), len(cr.rules), cr.err))
		} else {
			e.applyAll(ctx, cr.changes(now), now, sum, errs)
		}
		<-slots
	}
	// The reader goroutine has ended (reads is closed).
	sum.Deferred = deferred
	if resume == "" {
		// A whole pass: the next one starts one account further on,
		// so that no account is always measured last.
		resume = order[min(1, len(order)-1)]
	}
	e.mu.Lock()
	e.next = resume
	e.mu.Unlock()
	return nil
}

// passOrder is the accounts in the order of this pass: from the one the
// last pass left for it, round to the one before.
func (e *RuleEvaluator) passOrder(accounts []string) []string {
	e.mu.Lock()
	first, _ := slices.BinarySearch(accounts, e.next)
	e.mu.Unlock()
	return append(slices.Clone(accounts[first%len(accounts):]), accounts[:first%len(accounts)]...)
}

// changes are the state changes of the chunk's rules measured at now.
func (cr *chunkRead) changes(now time.Time) []change {
	var changes []change
	for _, r := range cr.rules {
		if c, ok := measure(r, now, cr.cur[r.MCPID][r.WindowMinutes], cr.past(r)); ok {
			changes = append(changes, c)
		}
	}
	return changes
}

// chunkRead is one chunk of a pass and its windows, read (done closed)
// while an earlier chunk is applied.
type chunkRead struct {
	rules     []*EvalRule
	cur, prev map[string]map[int]map[string]analytics.WindowStat
	// release is the previous release's figures of the MCPs with a
	// previous_release rule.
	release map[string]map[string]analytics.WindowStat
	// older are the seasonal rules' windows two to SeasonalWeeks weeks
	// back (prev is one week back).
	older []map[string]map[int]map[string]analytics.WindowStat
	err   error
	done  chan struct{}
}

// readAhead is how many chunks a pass reads at once: ReadAhead when the
// reader measures reads concurrently (analytics.WindowSetBatchReader),
// one otherwise.
func (e *RuleEvaluator) readAhead() int {
	if _, ok := e.stats.(analytics.WindowSetBatchReader); !ok {
		return 1
	}
	return max(1, e.ReadAhead)
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
			applied, _, err := e.apply(ctx, c, now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				sum.Failed++
				*errs = append(*errs, fmt.Errorf("rule %s: %w", c.rule.ID, err))
			case applied && c.notice:
				sum.Notices++
			case applied && c.fired:
				sum.Fired++
			case applied:
				sum.Resolved++
			}
		}()
	}
	wg.Wait()
}

// EvaluateRule implements Evaluator with the same transition code as the
// pass. When another evaluator changed the rule first, the answer reports
// the state it left, and fired is false.
func (e *RuleEvaluator) EvaluateRule(ctx context.Context, accountID, ruleID string, now time.Time) (Evaluation, error) {
	r, err := e.store.EvalRule(ctx, accountID, ruleID)
	if err != nil {
		return Evaluation{}, err
	}
	cur, prev, err := e.windowStats(ctx, &r, now)
	if err != nil {
		return Evaluation{}, err
	}
	past, err := e.seasonalHistory(ctx, &r, now, prev)
	if err != nil {
		return Evaluation{}, err
	}
	c, changes := measure(&r, now, cur, past)
	ev := Evaluation{State: r.State, Value: c.value(), BaselineValue: c.reading.Baseline, Calls: c.reading.Calls, Expected: c.reading.Expected}
	if !r.Enabled || !changes {
		return ev, nil
	}
	applied, n, err := e.apply(ctx, c, now)
	if err != nil {
		return Evaluation{}, err
	}
	if c.notice {
		ev.Deliveries = n
		return ev, nil
	}
	if applied {
		ev.State, ev.Fired, ev.Resolved, ev.Deliveries = c.next, c.fired, !c.fired, n
		return ev, nil
	}
	ev.State, err = e.store.RuleState(ctx, ruleID)
	if err != nil {
		return Evaluation{}, err
	}
	return ev, nil
}

// value is the measured value, nil when there is none.
func (c change) value() *float64 {
	if !c.reading.HasValue {
		return nil
	}
	v := c.reading.Value
	return &v
}

// apply writes one transition, reporting false when the rule changed under
// it, in which case nothing is written, and how many deliveries it created.
func (e *RuleEvaluator) apply(ctx context.Context, c change, now time.Time) (bool, int, error) {
	e.noteToolChanges(ctx, &c, now)
	if c.notice {
		return e.store.SnoozeEnded(ctx, *c.rule, now, func(rule Rule, audience []Member, connected map[string]bool) []PlannedDelivery {
			return planFiring(rule, c.reading, audience, connected)
		})
	}
	return e.store.Transition(ctx, *c.rule, StateChange{Next: c.next, Value: c.value(), At: now, Expected: c.reading.Expected},
		func(rule Rule, audience []Member, connected map[string]bool) []PlannedDelivery {
			return PlanTransition(rule, c.fired, c.reading, now, audience, connected)
		})
}

// PlanTransition decides the deliveries of a transition of rule, as stored
// when the transition is applied: PlanFanOut for a firing, none while the
// rule is snoozed at now; PlanResolve for a resolve.
func PlanTransition(rule Rule, fired bool, rd Reading, now time.Time, audience []Member, connected map[string]bool) []PlannedDelivery {
	switch {
	case !fired:
		return PlanResolve(rule, rd, now, audience, connected)
	case rule.Snoozed(now):
		return nil
	}
	return withProbeNote(planFiring(rule, rd, audience, connected), rd, now)
}
