package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/ids"
)

// EvaluationStore implements alerting.EvaluationStore: the SQL of the rule
// pass (the pass itself is alerting.RuleEvaluator).
//
// Exactly once across instances: a state change is a conditional UPDATE of
// the rule row (WHERE state = <the state we measured from> and the rule's
// definition is the one we measured), which locks the row, re-checks the
// condition on the latest committed version after any concurrent writer
// commits, and changes nothing if another instance or a manual evaluation
// got there first. The fan-out runs in the same transaction, so a firing
// and its deliveries commit together or not at all. The per-pass advisory
// lock only spares the other instances the duplicate work of measuring.
type EvaluationStore struct {
	db *DB
}

var _ alerting.EvaluationStore = (*EvaluationStore)(nil)

// NewEvaluationStore returns the store of the rule pass.
func NewEvaluationStore(db *DB) *EvaluationStore { return &EvaluationStore{db: db} }

// TransitionConcurrency is how many rule transitions a pass may apply at
// once on db: up to 8 (measured: a pass firing 10,000 rules took 11.5 s
// with 4, 8.3 s with 8 on 2 cores), leaving the pool two connections: the
// pass's lock and one for everyone else.
func (db *DB) TransitionConcurrency() int {
	return min(8, max(1, int(db.Pool.Config().MaxConns)-2))
}

// WithPassLock implements alerting.EvaluationStore with the session-level
// advisory lock LockEvaluator.
func (s *EvaluationStore) WithPassLock(ctx context.Context, fn func(context.Context) error) (bool, error) {
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return false, wrap(err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, LockEvaluator).Scan(&locked); err != nil {
		return false, wrap(err)
	}
	if !locked {
		return false, nil
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
	return true, fn(ctx)
}

const evalRuleColumns = `id, account_id, mcp_id, name, metric, tool, comparator, threshold, window_minutes,
	channels, enabled, state, notify_on_resolve, snoozed_until, min_calls, baseline, last_fired_at, sensitivity, severity, error_kind, min_severity,
	(SELECT m.created_at FROM mcps m WHERE m.id = rules.mcp_id)`

// scanEvalRule reads a rule as the pass sees it: snoozed_until as stored,
// an ended snooze too (Rule.SnoozeEnded needs it).
func scanEvalRule(row pgx.CollectableRow) (alerting.EvalRule, error) {
	var r alerting.EvalRule
	var mcpCreated *time.Time
	err := row.Scan(&r.ID, &r.AccountID, &r.MCPID, &r.Name, &r.Metric, &r.Tool, &r.Comparator, &r.Threshold,
		&r.WindowMinutes, &r.Channels, &r.Enabled, &r.State, &r.NotifyOnResolve, &r.SnoozedUntil, &r.MinCalls, &r.Baseline, &r.LastFiredAt,
		&r.Sensitivity, &r.Severity, &r.ErrorKind, &r.MinSeverity, &mcpCreated)
	r.SnoozedUntil, r.LastFiredAt = utcPtr(r.SnoozedUntil), utcPtr(r.LastFiredAt)
	if mcpCreated != nil {
		r.MCPCreatedAt = mcpCreated.UTC()
	}
	return r, err
}

// EnabledRules implements alerting.EvaluationStore.
func (s *EvaluationStore) EnabledRules(ctx context.Context) ([]alerting.EvalRule, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+evalRuleColumns+` FROM rules WHERE enabled`)
	if err != nil {
		return nil, wrap(err)
	}
	rules, err := pgx.CollectRows(rows, scanEvalRule)
	return rules, wrap(err)
}

// EvalRule implements alerting.EvaluationStore.
func (s *EvaluationStore) EvalRule(ctx context.Context, accountID, ruleID string) (alerting.EvalRule, error) {
	if !alerting.PlausibleID(ruleID) {
		return alerting.EvalRule{}, notFound("Rule")
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+evalRuleColumns+` FROM rules WHERE id = $1 AND account_id = $2`, ruleID, accountID)
	if err != nil {
		return alerting.EvalRule{}, wrap(err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanEvalRule)
	if errors.Is(err, pgx.ErrNoRows) {
		return alerting.EvalRule{}, notFound("Rule")
	}
	return r, wrap(err)
}

// RuleState implements alerting.EvaluationStore.
func (s *EvaluationStore) RuleState(ctx context.Context, ruleID string) (string, error) {
	var state string
	err := s.db.Pool.QueryRow(ctx, `SELECT state FROM rules WHERE id = $1`, ruleID).Scan(&state)
	if isNotFound(err) {
		return "", notFound("Rule")
	}
	return state, wrap(err)
}

// ruleUnchanged is the condition every state write carries: the rule is
// still enabled, still in the state the evaluation started from, and still
// defined as it was measured. $1 is the id, $2 the state measured from, $3
// to $12 the definition.
const ruleUnchanged = `id = $1 AND state = $2 AND enabled AND metric = $3 AND tool IS NOT DISTINCT FROM $4
	AND comparator = $5 AND threshold = $6 AND window_minutes = $7 AND min_calls = $8
	AND baseline IS NOT DISTINCT FROM $9 AND sensitivity IS NOT DISTINCT FROM $10
	AND error_kind IS NOT DISTINCT FROM $11 AND min_severity IS NOT DISTINCT FROM $12`

func ruleUnchangedArgs(r alerting.EvalRule) []any {
	return []any{r.ID, r.State, r.Metric, r.Tool, r.Comparator, r.Threshold, r.WindowMinutes, r.MinCalls, r.Baseline, r.Sensitivity, r.ErrorKind, r.MinSeverity}
}

// Transition implements alerting.EvaluationStore. The state write, the
// audience and the connected channels go in one batch (one round trip); the
// UPDATE comes first, so the audience is read after the row is locked, as it
// is at the moment of the transition. The history event and the deliveries
// follow in the same transaction.
func (s *EvaluationStore) Transition(ctx context.Context, r alerting.EvalRule, c alerting.StateChange, plan alerting.FanOut) (bool, int, error) {
	return s.changeRule(ctx, r, ruleChange{
		update: `UPDATE rules SET state = $13,
				last_fired_at = CASE WHEN $13 = 'firing' THEN $14 ELSE last_fired_at END
			WHERE ` + ruleUnchanged + ` RETURNING name, channels, notify_on_resolve, snoozed_until`,
		args: append(ruleUnchangedArgs(r), c.Next, c.At),
		// Name, channels, resolve notices and the snooze may have changed
		// since the pass loaded the rule without resetting its state; plan
		// with the latest.
		returning: func(rule *alerting.Rule) []any {
			return []any{&rule.Name, &rule.Channels, &rule.NotifyOnResolve, &rule.SnoozedUntil}
		},
		applied: func(ctx context.Context, tx pgx.Tx, rule *alerting.Rule) (bool, error) {
			rule.SnoozedUntil = utcPtr(rule.SnoozedUntil)
			var low, high *float64
			if c.Expected != nil {
				low, high = &c.Expected.Low, &c.Expected.High
			}
			_, err := tx.Exec(ctx, `INSERT INTO rule_events (id, account_id, rule_id, kind, value, threshold, created_at, expected_low, expected_high)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				ids.New(prefixEvent), r.AccountID, r.ID, c.EventKind(), c.Value, r.Threshold, c.At, low, high)
			return err == nil, err
		},
		at: c.At,
	}, plan)
}

// ruleChange is one conditional write of the evaluator to a rule.
type ruleChange struct {
	update    string                          // UPDATE rules … WHERE ruleUnchanged … RETURNING
	args      []any                           // its arguments
	returning func(rule *alerting.Rule) []any // where its RETURNING row goes
	// applied runs in the transaction once the UPDATE changed the row; it
	// may write more and says whether the change fans out.
	applied func(ctx context.Context, tx pgx.Tx, rule *alerting.Rule) (fanOut bool, err error)
	at      time.Time // the deliveries' created_at
}

// changeRule runs ch in one transaction, the shape every evaluator write
// shares: the UPDATE batched with the reads of the audience and the
// connected channels (one round trip, the audience read once the row is
// locked), then ch.applied, then the deliveries plan makes of the rule as
// the UPDATE returned it. It reports whether the UPDATE changed the row
// and how many deliveries were queued.
func (s *EvaluationStore) changeRule(ctx context.Context, r alerting.EvalRule, ch ruleChange, plan alerting.FanOut) (bool, int, error) {
	var applied bool
	var deliveries int
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var (
			rule      = r.Rule
			audience  []alerting.Member
			connected = map[string]bool{}
		)
		b := &pgx.Batch{}
		b.Queue(ch.update, ch.args...).Query(func(rows pgx.Rows) error {
			n, err := pgx.ForEachRow(rows, ch.returning(&rule), func() error { return nil })
			applied = n.RowsAffected() == 1
			return err
		})
		queueAudience(b, r.AccountID, &audience, connected)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !applied {
			return nil
		}
		fanOut, err := ch.applied(ctx, tx, &rule)
		if err != nil || !fanOut {
			return err
		}
		planned := plan(rule, audience, connected)
		deliveries = len(planned)
		return insertDeliveries(ctx, tx, r.AccountID, rule, planned, ch.at)
	})
	if err != nil || !applied {
		deliveries = 0
	}
	return applied, deliveries, wrap(err)
}

// queueAudience queues the reads of the team (with their preferences)
// and of the connected team channels of an account, which a fan-out
// plans with, into audience and connected.
func queueAudience(b *pgx.Batch, accountID string, audience *[]alerting.Member, connected map[string]bool) {
	b.Queue(`SELECT m.user_id, COALESCE(p.in_app, true), COALESCE(p.email, true)
		FROM memberships m LEFT JOIN channel_preferences p ON p.account_id = m.account_id AND p.user_id = m.user_id
		WHERE m.account_id = $1 ORDER BY m.joined_at, m.user_id`, accountID).Query(func(rows pgx.Rows) error {
		var m alerting.Member
		_, err := pgx.ForEachRow(rows, []any{&m.UserID, &m.Prefs.InApp, &m.Prefs.Email}, func() error {
			*audience = append(*audience, m)
			return nil
		})
		return err
	})
	b.Queue(`SELECT channel FROM webhook_connections WHERE account_id = $1`, accountID).Query(func(rows pgx.Rows) error {
		var ch string
		_, err := pgx.ForEachRow(rows, []any{&ch}, func() error {
			connected[ch] = true
			return nil
		})
		return err
	})
}

// SnoozeEnded implements alerting.EvaluationStore. The conditional UPDATE
// clearing the ended snooze is what makes the notice happen once across
// instances; the firing muted by the snooze is told apart from one that
// came before the snooze began by its deliveries: a transition's carry
// its time, last_fired_at, as created_at.
func (s *EvaluationStore) SnoozeEnded(ctx context.Context, r alerting.EvalRule, at time.Time, plan alerting.FanOut) (bool, int, error) {
	if r.SnoozedUntil == nil || r.LastFiredAt == nil {
		return false, 0, nil
	}
	var muted bool
	applied, deliveries, err := s.changeRule(ctx, r, ruleChange{
		update: `UPDATE rules SET snoozed_until = NULL
			WHERE ` + ruleUnchanged + ` AND snoozed_until = $13 AND last_fired_at = $14
			RETURNING name, channels, NOT EXISTS (SELECT 1 FROM deliveries d
				WHERE d.account_id = rules.account_id AND d.rule_id = rules.id AND d.created_at >= $14)`,
		args:      append(ruleUnchangedArgs(r), *r.SnoozedUntil, *r.LastFiredAt),
		returning: func(rule *alerting.Rule) []any { return []any{&rule.Name, &rule.Channels, &muted} },
		applied: func(_ context.Context, _ pgx.Tx, rule *alerting.Rule) (bool, error) {
			rule.SnoozedUntil = nil
			return muted, nil
		},
		at: at,
	}, plan)
	if err != nil || !applied || !muted {
		return false, 0, err
	}
	return true, deliveries, nil
}

// notifyEnded inserts the resolve notices of a firing rule that ends for
// reason (alerting.PlanEnded: with notify_on_resolve, and on the channels
// that resolve always). Runs in the transaction that changes the
// rule.
func notifyEnded(ctx context.Context, tx pgx.Tx, accountID string, r alerting.Rule, reason string, now time.Time) error {
	if r.State != alerting.StateFiring || !r.HearsResolves() {
		return nil
	}
	var audience []alerting.Member
	connected := map[string]bool{}
	b := &pgx.Batch{}
	queueAudience(b, accountID, &audience, connected)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return insertDeliveries(ctx, tx, accountID, r, alerting.PlanEnded(r, reason, now, audience, connected), now)
}

// insertDeliveries writes a firing's deliveries in one statement, as
// columns unnested from arrays: a fan-out to a team of thousands is one
// round trip. Queued rows are due for the sender at once.
func insertDeliveries(ctx context.Context, tx pgx.Tx, accountID string, r alerting.Rule, plan []alerting.PlannedDelivery, now time.Time) error {
	if len(plan) == 0 {
		return nil
	}
	n := len(plan)
	deliveryIDs, channels, recipients, statuses, titles, bodies := make([]string, n), make([]string, n), make([]*string, n), make([]string, n), make([]string, n), make([]string, n)
	kinds, summaries, details := make([]string, n), make([]string, n), make([]string, n)
	for i, d := range plan {
		deliveryIDs[i], channels[i], recipients[i], statuses[i], titles[i], bodies[i] = ids.New(prefixDelivery), d.Channel, d.RecipientUserID, d.Status, d.Title, d.Body
		kinds[i], summaries[i] = d.Kind, d.Summary
		if kinds[i] == "" {
			kinds[i] = alerting.KindFiring
		}
		b, err := json.Marshal(alerting.DetailsOf(r, d.Value))
		if err != nil {
			return err
		}
		details[i] = string(b)
	}
	severity := r.Severity
	if severity == "" {
		severity = alerting.SeverityError
	}
	// The episode is the rule's last_fired_at as this transaction sees it
	// (a firing has just set it); a deleted rule's is the one it had.
	_, err := tx.Exec(ctx, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel,
			recipient_user_id, status, title, body, created_at, next_attempt_at, queued_at, kind, summary,
			severity, episode_at, details)
		SELECT d.id, $1, $2, $3, $4, d.channel, d.recipient, d.status, d.title, d.body, $5,
			CASE WHEN d.status = 'queued' THEN $5::timestamptz END,
			CASE WHEN d.status = 'queued' THEN $5::timestamptz END, d.kind, d.summary,
			$15, COALESCE((SELECT last_fired_at FROM rules WHERE id = $2), $16, $5), d.details::jsonb
		FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
			AS d(id, channel, recipient, status, title, body, kind, summary, details)`,
		accountID, r.ID, r.Name, r.MCPID, now, deliveryIDs, channels, recipients, statuses, titles, bodies, kinds, summaries, details,
		severity, r.LastFiredAt)
	return err
}

var _ alerting.RenotifyStore = (*EvaluationStore)(nil)

// Renotify implements alerting.RenotifyStore in one transaction: the due
// rules are locked (SKIP LOCKED: another instance takes the others), each
// one's audience read and its deliveries inserted, then last_notified_at
// set. The value is the one of the rule's last fired event.
func (s *EvaluationStore) Renotify(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+evalRuleColumns+` FROM rules
			WHERE enabled AND state = 'firing' AND renotify_minutes IS NOT NULL
				AND GREATEST(last_notified_at, last_fired_at) + renotify_minutes * interval '1 minute' <= $1
				AND (snoozed_until IS NULL OR snoozed_until <= $1)
			ORDER BY id LIMIT 200 FOR UPDATE SKIP LOCKED`, now)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, scanEvalRule)
		if err != nil {
			return err
		}
		for _, r := range due {
			value, expected, err := lastFired(ctx, tx, r.ID)
			if err != nil {
				return err
			}
			var audience []alerting.Member
			connected := map[string]bool{}
			b := &pgx.Batch{}
			queueAudience(b, r.AccountID, &audience, connected)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			plan := alerting.PlanRenotifyFanOut(r.Rule, value, audience, connected)
			if expected != nil && r.Seasonal() {
				plan = alerting.PlanSeasonalFanOut(r.Rule, "Still firing", value, *expected, audience, connected)
			}
			if plan, err = withProbeNote(ctx, tx, r.Rule, plan, now); err != nil {
				return err
			}
			if err := insertDeliveries(ctx, tx, r.AccountID, r.Rule, plan, now); err != nil {
				return err
			}
		}
		if len(due) > 0 {
			ruleIDs := make([]string, len(due))
			for i, r := range due {
				ruleIDs[i] = r.ID
			}
			if _, err := tx.Exec(ctx, `UPDATE rules SET last_notified_at = $2 WHERE id = ANY($1)`, ruleIDs, now); err != nil {
				return err
			}
		}
		n = len(due)
		return nil
	})
	return n, wrap(err)
}

// lastFired is the value (0 when none) and, for a seasonal rule, the band
// of the rule's last fired event, which a re-notification repeats.
func lastFired(ctx context.Context, tx pgx.Tx, ruleID string) (float64, *alerting.Band, error) {
	var value float64
	var low, high *float64
	err := tx.QueryRow(ctx, `SELECT COALESCE(value, 0), expected_low, expected_high FROM rule_events
		WHERE rule_id = $1 AND kind = 'fired' ORDER BY created_at DESC LIMIT 1`, ruleID).Scan(&value, &low, &high)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil || low == nil || high == nil {
		return value, nil, err
	}
	return value, &alerting.Band{Low: *low, High: *high}, nil
}
