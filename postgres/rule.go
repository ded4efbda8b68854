package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/ids"
)

// RuleService stores alert rules. Every query is scoped by account id, so a
// rule or MCP of another account is not found.
type RuleService struct {
	db *DB
	// MaxPerAccount caps an account's rules (alerting.MaxRulesPerAccount
	// by default).
	MaxPerAccount int
}

var _ alerting.RuleService = (*RuleService)(nil)

// NewRuleService returns the rule store.
func NewRuleService(db *DB) *RuleService {
	return &RuleService{db: db, MaxPerAccount: alerting.MaxRulesPerAccount}
}

const ruleColumns = `id, mcp_id, name, metric, tool, comparator, threshold, window_minutes,
	channels, enabled, state, last_fired_at, created_at, notify_on_resolve, snoozed_until, min_calls, baseline, renotify_minutes, sensitivity, severity, error_kind, min_severity`

// scanRule reads a rule; a snooze that has ended reads as none.
func scanRule(row pgx.Row) (alerting.Rule, error) {
	var r alerting.Rule
	err := row.Scan(&r.ID, &r.MCPID, &r.Name, &r.Metric, &r.Tool, &r.Comparator, &r.Threshold, &r.WindowMinutes,
		&r.Channels, &r.Enabled, &r.State, &r.LastFiredAt, &r.CreatedAt, &r.NotifyOnResolve, &r.SnoozedUntil,
		&r.MinCalls, &r.Baseline, &r.RenotifyMinutes, &r.Sensitivity, &r.Severity, &r.ErrorKind, &r.MinSeverity)
	if err != nil {
		return alerting.Rule{}, wrap(err)
	}
	r.CreatedAt, r.LastFiredAt, r.SnoozedUntil = utc(r.CreatedAt), utcPtr(r.LastFiredAt), utcPtr(r.SnoozedUntil)
	r.ClearExpiredSnooze(time.Now())
	return r, nil
}

// CreateRule implements alerting.RuleService. The MCP check and the insert
// are one statement: the rule takes its account from the MCP row, which
// must belong to accountID.
func (s *RuleService) CreateRule(ctx context.Context, accountID, mcpID string, c alerting.RuleCreate) (alerting.Rule, error) {
	if err := c.Validate(); err != nil {
		return alerting.Rule{}, err
	}
	if !alerting.PlausibleID(mcpID) {
		return alerting.Rule{}, notFound("MCP")
	}
	r := c.Rule(ids.New(prefixRule), mcpID, time.Now())
	var created alerting.Rule
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := holdCap(ctx, tx, accountID, "rules", s.MaxPerAccount, "alert rules"); err != nil {
			return err
		}
		var err error
		created, err = scanRule(tx.QueryRow(ctx, `INSERT INTO rules (id, account_id, mcp_id, name, metric, tool, comparator,
			threshold, window_minutes, channels, enabled, state, notify_on_resolve, snoozed_until, min_calls, baseline, renotify_minutes, sensitivity, severity, error_kind, min_severity)
		SELECT $1, account_id, id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21
		FROM mcps WHERE id = $2 AND account_id = $3
		RETURNING `+ruleColumns,
			r.ID, mcpID, accountID, r.Name, r.Metric, r.Tool, r.Comparator, r.Threshold, r.WindowMinutes, r.Channels, r.Enabled, r.State,
			r.NotifyOnResolve, r.SnoozedUntil, r.MinCalls, r.Baseline, r.RenotifyMinutes, r.Sensitivity, r.Severity, r.ErrorKind, r.MinSeverity))
		return err
	})
	if isNotFound(err) {
		return alerting.Rule{}, notFound("MCP")
	}
	return created, wrap(err)
}

// Rule implements alerting.RuleService.
func (s *RuleService) Rule(ctx context.Context, accountID, ruleID string) (alerting.Rule, error) {
	if !alerting.PlausibleID(ruleID) {
		return alerting.Rule{}, notFound("Rule")
	}
	r, err := scanRule(s.db.Pool.QueryRow(ctx, `SELECT `+ruleColumns+` FROM rules WHERE id = $1 AND account_id = $2`, ruleID, accountID))
	if isNotFound(err) {
		return alerting.Rule{}, notFound("Rule")
	}
	return r, err
}

// Rules implements alerting.RuleService.
func (s *RuleService) Rules(ctx context.Context, accountID, mcpID string) ([]alerting.Rule, error) {
	if err := mcpInAccount(ctx, s.db, accountID, mcpID); err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+ruleColumns+` FROM rules WHERE mcp_id = $1 AND account_id = $2
		ORDER BY created_at, id`, mcpID, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.Rule, error) { return scanRule(row) })
	if err != nil {
		return nil, wrap(err)
	}
	if out == nil {
		out = []alerting.Rule{}
	}
	return out, nil
}

// UpdateRule implements alerting.RuleService. The rule row is locked while
// the update is merged, so two concurrent PATCHes each see the other's
// result, and the evaluator cannot store a state computed for the old
// definition (it re-checks the definition when it writes).
func (s *RuleService) UpdateRule(ctx context.Context, accountID, ruleID string, upd alerting.RuleUpdate) (alerting.Rule, error) {
	if !alerting.PlausibleID(ruleID) {
		return alerting.Rule{}, notFound("Rule")
	}
	var out alerting.Rule
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		cur, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleColumns+` FROM rules WHERE id = $1 AND account_id = $2 FOR UPDATE`, ruleID, accountID))
		if isNotFound(err) {
			return notFound("Rule")
		}
		if err != nil {
			return err
		}
		now := time.Now()
		next, err := upd.Apply(cur, now)
		if err != nil {
			return err
		}
		if cur.State == alerting.StateFiring && next.State == alerting.StateOK {
			// Redefined or disabled while firing: the old rule, under its
			// new name and channels, says it no longer fires.
			ended, reason := next, alerting.EndRedefined
			ended.State = alerting.StateFiring
			ended.Metric, ended.Tool, ended.Comparator, ended.Threshold, ended.Baseline, ended.Sensitivity = cur.Metric, cur.Tool, cur.Comparator, cur.Threshold, cur.Baseline, cur.Sensitivity
			ended.ErrorKind, ended.MinSeverity = cur.ErrorKind, cur.MinSeverity
			if !next.Enabled {
				reason = alerting.EndDisabled
			}
			if err := recordEnded(ctx, tx, accountID, cur, reason, now); err != nil {
				return err
			}
			if err := notifyEnded(ctx, tx, accountID, ended, reason, now); err != nil {
				return err
			}
		}
		out, err = scanRule(tx.QueryRow(ctx, `UPDATE rules SET name = $2, metric = $3, tool = $4, comparator = $5,
				threshold = $6, window_minutes = $7, channels = $8, enabled = $9, state = $10,
				notify_on_resolve = $11, snoozed_until = $12, min_calls = $13, baseline = $14, renotify_minutes = $15, sensitivity = $16, severity = $17, error_kind = $18, min_severity = $19
			WHERE id = $1 RETURNING `+ruleColumns,
			ruleID, next.Name, next.Metric, next.Tool, next.Comparator, next.Threshold, next.WindowMinutes,
			next.Channels, next.Enabled, next.State, next.NotifyOnResolve, next.SnoozedUntil, next.MinCalls, next.Baseline, next.RenotifyMinutes, next.Sensitivity, next.Severity, next.ErrorKind, next.MinSeverity))
		return err
	})
	if err != nil {
		return alerting.Rule{}, wrap(err)
	}
	return out, nil
}

// DeleteRule implements alerting.RuleService. Deliveries keep the rule's id
// and name; a firing rule with notify_on_resolve sends resolve notices
// saying it was deleted.
func (s *RuleService) DeleteRule(ctx context.Context, accountID, ruleID string) error {
	if !alerting.PlausibleID(ruleID) {
		return notFound("Rule")
	}
	return wrap(pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		cur, err := scanRule(tx.QueryRow(ctx, `DELETE FROM rules WHERE id = $1 AND account_id = $2 RETURNING `+ruleColumns, ruleID, accountID))
		if isNotFound(err) {
			return notFound("Rule")
		}
		if err != nil {
			return err
		}
		if err := recordEnded(ctx, tx, accountID, cur, alerting.EndDeleted, time.Now()); err != nil {
			return err
		}
		return notifyEnded(ctx, tx, accountID, cur, alerting.EndDeleted, time.Now())
	}))
}

// RuleEvents implements alerting.RuleService.
func (s *RuleService) RuleEvents(ctx context.Context, accountID, ruleID string, f alerting.RuleEventFilter) (alerting.RuleEventPage, error) {
	cur, err := alerting.ParseDeliveryCursor(f.Cursor)
	if err != nil {
		return alerting.RuleEventPage{}, err
	}
	if !alerting.PlausibleID(ruleID) {
		return alerting.RuleEventPage{}, notFound("Rule")
	}
	// A deleted rule's history stays readable by its id.
	var exists bool
	if err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rules WHERE id = $1 AND account_id = $2)
		OR EXISTS (SELECT 1 FROM rule_events WHERE rule_id = $1 AND account_id = $2)`, ruleID, accountID).Scan(&exists); err != nil {
		return alerting.RuleEventPage{}, wrap(err)
	}
	if !exists {
		return alerting.RuleEventPage{}, notFound("Rule")
	}
	q := sqlBuilder{args: []any{ruleID, accountID}}
	q.sql.WriteString(`SELECT id, kind, value, threshold, reason, created_at, expected_low, expected_high FROM rule_events WHERE rule_id = $1 AND account_id = $2`)
	q.after(cur)
	q.page(f.Limit)
	rows, err := s.db.Pool.Query(ctx, q.sql.String(), q.args...)
	if err != nil {
		return alerting.RuleEventPage{}, wrap(err)
	}
	page := alerting.RuleEventPage{Items: []alerting.RuleEvent{}}
	var e alerting.RuleEvent
	var low, high *float64
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.Kind, &e.Value, &e.Threshold, &e.Reason, &e.At, &low, &high}, func() error {
		e.At, e.Expected = utc(e.At), nil
		if low != nil && high != nil {
			e.Expected = &alerting.Band{Low: *low, High: *high}
		}
		page.Items = append(page.Items, e)
		return nil
	})
	if err != nil {
		return alerting.RuleEventPage{}, wrap(err)
	}
	page.Items, page.NextCursor = trimPage(page.Items, f.Limit, func(e alerting.RuleEvent) alerting.DeliveryCursor {
		return alerting.DeliveryCursor{CreatedAt: e.At, ID: e.ID}
	})
	return page, nil
}

// isNotFound reports a query that found no row (wrapped or not).
func isNotFound(err error) bool {
	return errors.Is(err, pgx.ErrNoRows) || telemetry.ErrorCode(err) == telemetry.ENOTFOUND
}

// recordEnded adds the resolved event of a firing rule that ends for
// reason (redefined, disabled, deleted) to its history, whether or not
// anyone is notified; a rule that was not firing has nothing to end.
func recordEnded(ctx context.Context, tx pgx.Tx, accountID string, cur alerting.Rule, reason string, now time.Time) error {
	if cur.State != alerting.StateFiring {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO rule_events (id, account_id, rule_id, kind, value, threshold, reason, created_at)
		VALUES ($1, $2, $3, 'resolved', NULL, $4, $5, $6)`, ids.New(prefixEvent), accountID, cur.ID, cur.Threshold, reason, now)
	return err
}

// holdCap locks the account row and fails with ELIMITREACHED when the
// account already holds limit rows of table (rules, slos; a constant, never
// input). The lock serialises concurrent creations, so the cap holds
// exactly; the count is a statement of its own, so that it sees the rows
// committed while this one waited for the lock.
func holdCap(ctx context.Context, tx pgx.Tx, accountID, table string, limit int, what string) error {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, accountID).Scan(&n); err != nil {
		return err
	}
	if n >= limit {
		return telemetry.Errorf(telemetry.ELIMITREACHED, "An account holds at most %d %s; delete one to create another.", limit, what)
	}
	return nil
}

// mcpInAccount returns ENOTFOUND unless the MCP is the account's.
func mcpInAccount(ctx context.Context, db *DB, accountID, mcpID string) error {
	if !alerting.PlausibleID(mcpID) {
		return notFound("MCP")
	}
	var exists bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mcps WHERE id = $1 AND account_id = $2)`, mcpID, accountID).Scan(&exists); err != nil {
		return wrap(err)
	}
	if !exists {
		return notFound("MCP")
	}
	return nil
}
