package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
)

// Evaluator implements alerting.Evaluator: rule values from an
// analytics.WindowReader, states and deliveries in PostgreSQL.
//
// Exactly once across instances: a state change is a conditional UPDATE of
// the rule row (WHERE state = <the state we measured from> and the rule's
// definition is the one we measured), which locks the row, re-checks the
// condition on the latest committed version after any concurrent writer
// commits, and changes nothing if another instance or a manual evaluation
// got there first. The fan-out runs in the same transaction, so a firing
// and its deliveries commit together or not at all. The per-pass advisory
// lock only spares the other instances the duplicate work of measuring.
type Evaluator struct {
	db    *DB
	stats analytics.WindowReader
	log   *slog.Logger
	// concurrency bounds the transitions applied at once in a pass, each
	// holding one pooled connection.
	concurrency int
}

var _ alerting.Evaluator = (*Evaluator)(nil)

// NewEvaluator returns an evaluator reading rule values from stats.
func NewEvaluator(db *DB, stats analytics.WindowReader, log *slog.Logger) *Evaluator {
	if log == nil {
		log = slog.Default()
	}
	// Up to 8 transitions at once (measured: a pass firing 10,000 rules
	// took 11.5 s with 4, 8.3 s with 8 on 2 cores), leaving the pool two
	// connections: the pass's lock and one for everyone else.
	conc := min(8, max(1, int(db.Pool.Config().MaxConns)-2))
	return &Evaluator{db: db, stats: stats, log: log, concurrency: conc}
}

// evalRule is a rule as the evaluator loads it: the domain rule plus its
// account, which the fan-out needs.
type evalRule struct {
	alerting.Rule
	AccountID string
}

const evalRuleColumns = `id, account_id, mcp_id, name, metric, tool, comparator, threshold, window_minutes,
	channels, enabled, state`

func scanEvalRule(row pgx.CollectableRow) (evalRule, error) {
	var r evalRule
	err := row.Scan(&r.ID, &r.AccountID, &r.MCPID, &r.Name, &r.Metric, &r.Tool, &r.Comparator, &r.Threshold,
		&r.WindowMinutes, &r.Channels, &r.Enabled, &r.State)
	return r, err
}

// EvaluateAll implements alerting.Evaluator. One WindowStats call per
// distinct window length covers every MCP with a rule of that length; only
// rules whose state changes touch PostgreSQL again.
func (e *Evaluator) EvaluateAll(ctx context.Context, now time.Time) (alerting.PassSummary, error) {
	var sum alerting.PassSummary
	conn, err := e.db.Pool.Acquire(ctx)
	if err != nil {
		return sum, wrap(err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, LockEvaluator).Scan(&locked); err != nil {
		return sum, wrap(err)
	}
	if !locked {
		sum.Skipped = true
		return sum, nil
	}
	defer func() {
		uctx := context.WithoutCancel(ctx)
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, LockEvaluator); err != nil {
			// A session lock outlives the pass on a pooled connection that
			// failed to unlock, and would keep every instance skipping;
			// closing the connection ends the session and the lock.
			_ = conn.Conn().Close(uctx)
		}
	}()

	rows, err := conn.Query(ctx, `SELECT `+evalRuleColumns+` FROM rules WHERE enabled`)
	if err != nil {
		return sum, wrap(err)
	}
	rules, err := pgx.CollectRows(rows, scanEvalRule)
	if err != nil {
		return sum, wrap(err)
	}
	sum.Rules = len(rules)

	byWindow := map[int][]*evalRule{}
	for i := range rules {
		byWindow[rules[i].WindowMinutes] = append(byWindow[rules[i].WindowMinutes], &rules[i])
	}
	windows := make([]int, 0, len(byWindow))
	for w := range byWindow {
		windows = append(windows, w)
	}
	sort.Ints(windows)

	var changes []change
	var errs []error
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
				errs = append(errs, fmt.Errorf("rule %s: %w", c.rule.ID, err))
			case applied && c.fired:
				sum.Fired++
			case applied:
				sum.Resolved++
			}
		}()
	}
	wg.Wait()
	return sum, errors.Join(errs...)
}

// windowStats measures the window of a group of rules of one length, for
// all their MCPs at once.
func (e *Evaluator) windowStats(ctx context.Context, group []*evalRule, now time.Time) (map[string]map[string]analytics.WindowStat, error) {
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

// change is a state transition an evaluation decided on, with what it
// measured.
type change struct {
	rule     *evalRule
	value    float64
	hasValue bool
	next     string
	fired    bool
}

// measure decides whether a rule changes state, given its MCP's stats.
func measure(r *evalRule, stats map[string]analytics.WindowStat) (change, bool) {
	value, ok := r.Value(stats)
	next, fired, _ := alerting.Transition(r.State, r.Breached(value, ok))
	return change{rule: r, value: value, hasValue: ok, next: next, fired: fired}, next != r.State
}

// EvaluateRule implements alerting.Evaluator with the same transition code
// as the pass. When another evaluator changed the rule first, the answer
// reports the state it left, and fired is false.
func (e *Evaluator) EvaluateRule(ctx context.Context, accountID, ruleID string, now time.Time) (alerting.Evaluation, error) {
	if !alerting.PlausibleID(ruleID) {
		return alerting.Evaluation{}, notFound("Rule")
	}
	rows, err := e.db.Pool.Query(ctx, `SELECT `+evalRuleColumns+` FROM rules WHERE id = $1 AND account_id = $2`, ruleID, accountID)
	if err != nil {
		return alerting.Evaluation{}, wrap(err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanEvalRule)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return alerting.Evaluation{}, notFound("Rule")
		}
		return alerting.Evaluation{}, wrap(err)
	}
	stats, err := e.windowStats(ctx, []*evalRule{&r}, now)
	if err != nil {
		return alerting.Evaluation{}, err
	}
	c, changes := measure(&r, stats[r.MCPID])
	ev := alerting.Evaluation{State: r.State}
	if c.hasValue {
		v := c.value
		ev.Value = &v
	}
	if !r.Enabled || !changes {
		return ev, nil
	}
	applied, err := e.apply(ctx, c, now)
	if err != nil {
		return alerting.Evaluation{}, err
	}
	if applied {
		ev.State, ev.Fired = c.next, c.fired
		return ev, nil
	}
	err = e.db.Pool.QueryRow(ctx, `SELECT state FROM rules WHERE id = $1`, ruleID).Scan(&ev.State)
	if isNotFound(err) {
		return alerting.Evaluation{}, notFound("Rule")
	}
	return ev, wrap(err)
}

// ruleUnchanged is the condition every state write carries: the rule is
// still enabled, still in the state the evaluation started from, and still
// defined as it was measured. $1 is the id, $2 the state measured from, $3
// to $7 the definition.
const ruleUnchanged = `id = $1 AND state = $2 AND enabled AND metric = $3 AND tool IS NOT DISTINCT FROM $4
	AND comparator = $5 AND threshold = $6 AND window_minutes = $7`

func ruleUnchangedArgs(r *evalRule) []any {
	return []any{r.ID, r.State, r.Metric, r.Tool, r.Comparator, r.Threshold, r.WindowMinutes}
}

// apply writes one transition, reporting false when the rule changed under
// it (another evaluator applied it, or the rule was edited, disabled or
// deleted), in which case nothing is written.
func (e *Evaluator) apply(ctx context.Context, c change, now time.Time) (bool, error) {
	if !c.fired {
		// Resolving writes only the state: one conditional UPDATE.
		tag, err := e.db.Pool.Exec(ctx, `UPDATE rules SET state = 'ok' WHERE `+ruleUnchanged, ruleUnchangedArgs(c.rule)...)
		return err == nil && tag.RowsAffected() == 1, wrap(err)
	}
	var applied bool
	err := pgx.BeginFunc(ctx, e.db.Pool, func(tx pgx.Tx) error {
		var err error
		applied, err = fire(ctx, tx, c, now)
		return err
	})
	return applied, wrap(err)
}

// fire moves a rule to firing and fans out, inside tx. The state write,
// the audience and the connected channels go in one batch (one round trip);
// the UPDATE comes first, so the audience is read after the row is locked,
// as it is at the moment of firing.
func fire(ctx context.Context, tx pgx.Tx, c change, now time.Time) (bool, error) {
	r := c.rule
	var (
		found     bool
		rule      = r.Rule
		audience  []alerting.Member
		connected = map[string]bool{}
	)
	b := &pgx.Batch{}
	args := append(ruleUnchangedArgs(r), now)
	b.Queue(`UPDATE rules SET state = 'firing', last_fired_at = $8 WHERE `+ruleUnchanged+` RETURNING name, channels`, args...).
		Query(func(rows pgx.Rows) error {
			// Name and channels may have changed since the pass loaded the
			// rule without resetting its state; fan out with the latest.
			n, err := pgx.ForEachRow(rows, []any{&rule.Name, &rule.Channels}, func() error { return nil })
			found = n.RowsAffected() == 1
			return err
		})
	b.Queue(`SELECT m.user_id, COALESCE(p.in_app, true), COALESCE(p.email, true)
		FROM memberships m LEFT JOIN channel_preferences p ON p.account_id = m.account_id AND p.user_id = m.user_id
		WHERE m.account_id = $1 ORDER BY m.joined_at, m.user_id`, r.AccountID).Query(func(rows pgx.Rows) error {
		var m alerting.Member
		_, err := pgx.ForEachRow(rows, []any{&m.UserID, &m.Prefs.InApp, &m.Prefs.Email}, func() error {
			audience = append(audience, m)
			return nil
		})
		return err
	})
	b.Queue(`SELECT channel FROM webhook_connections WHERE account_id = $1`, r.AccountID).Query(func(rows pgx.Rows) error {
		var ch string
		_, err := pgx.ForEachRow(rows, []any{&ch}, func() error {
			connected[ch] = true
			return nil
		})
		return err
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return false, err
	}
	if !found {
		return false, nil
	}
	plan := alerting.PlanFanOut(rule, c.value, audience, connected)
	return true, insertDeliveries(ctx, tx, r.AccountID, rule, plan, now)
}

// insertDeliveries writes a firing's deliveries in one statement, as
// columns unnested from arrays: a fan-out to a team of thousands is one
// round trip. Queued rows are due for the sender at once.
func insertDeliveries(ctx context.Context, tx pgx.Tx, accountID string, r alerting.Rule, plan []alerting.PlannedDelivery, now time.Time) error {
	if len(plan) == 0 {
		return nil
	}
	n := len(plan)
	ids, channels, recipients, statuses, titles, bodies := make([]string, n), make([]string, n), make([]*string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, d := range plan {
		ids[i], channels[i], recipients[i], statuses[i], titles[i], bodies[i] = newID(prefixDelivery), d.Channel, d.RecipientUserID, d.Status, d.Title, d.Body
	}
	_, err := tx.Exec(ctx, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel,
			recipient_user_id, status, title, body, created_at, next_attempt_at)
		SELECT d.id, $1, $2, $3, $4, d.channel, d.recipient, d.status, d.title, d.body, $5,
			CASE WHEN d.status = 'queued' THEN $5::timestamptz END
		FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
			AS d(id, channel, recipient, status, title, body)`,
		accountID, r.ID, r.Name, r.MCPID, now, ids, channels, recipients, statuses, titles, bodies)
	return err
}
