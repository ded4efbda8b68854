package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/ids"
)

const (
	prefixSLO      = "slo_"
	prefixSLOEvent = "sev_"
)

// SLOService stores SLOs (alerting.SLOService) and is the SLO pass's
// store (alerting.SLOEvalStore). Every query is scoped by account id.
type SLOService struct {
	db *DB
	// MaxPerAccount caps an account's SLOs.
	MaxPerAccount int
}

var (
	_ alerting.SLOService   = (*SLOService)(nil)
	_ alerting.SLOEvalStore = (*SLOService)(nil)
)

// NewSLOService returns the SLO store.
func NewSLOService(db *DB) *SLOService {
	return &SLOService{db: db, MaxPerAccount: alerting.MaxSLOsPerAccount}
}

const sloColumns = `id, mcp_id, name, kind, objective, threshold_ms, tool, error_kinds, window_days, channels,
	severity, enabled, state, last_alert_at, snoozed_until, notify_on_resolve, created_at, renotify_minutes`

func sloDest(s *alerting.SLO) []any {
	return []any{&s.ID, &s.MCPID, &s.Name, &s.Kind, &s.Objective, &s.ThresholdMs, &s.Tool, &s.ErrorKinds, &s.WindowDays,
		&s.Channels, &s.Severity, &s.Enabled, &s.State, &s.LastAlertAt, &s.SnoozedUntil, &s.NotifyOnResolve, &s.CreatedAt, &s.RenotifyMinutes}
}

func scanSLO(row pgx.Row) (alerting.SLO, error) {
	var s alerting.SLO
	if err := row.Scan(sloDest(&s)...); err != nil {
		return alerting.SLO{}, wrap(err)
	}
	return utcSLO(s, time.Now()), nil
}

func utcSLO(s alerting.SLO, now time.Time) alerting.SLO {
	s.CreatedAt, s.LastAlertAt, s.SnoozedUntil = utc(s.CreatedAt), utcPtr(s.LastAlertAt), utcPtr(s.SnoozedUntil)
	if s.SnoozedUntil != nil && !s.Snoozed(now) {
		s.SnoozedUntil = nil
	}
	return s
}

// CreateSLO implements alerting.SLOService; the cap is held under the
// account row's lock, as for rules.
func (s *SLOService) CreateSLO(ctx context.Context, accountID, mcpID string, c alerting.SLOCreate) (alerting.SLO, error) {
	if err := c.Validate(); err != nil {
		return alerting.SLO{}, err
	}
	if !alerting.PlausibleID(mcpID) {
		return alerting.SLO{}, notFound("MCP")
	}
	n := c.SLO(ids.New(prefixSLO), mcpID, time.Now())
	var created alerting.SLO
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := holdCap(ctx, tx, accountID, "slos", s.MaxPerAccount, "SLOs"); err != nil {
			return err
		}
		var err error
		created, err = scanSLO(tx.QueryRow(ctx, `INSERT INTO slos (id, account_id, mcp_id, name, kind, objective, threshold_ms, tool,
				error_kinds, window_days, channels, severity, enabled, snoozed_until, notify_on_resolve, renotify_minutes)
			SELECT $1, account_id, id, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16
			FROM mcps WHERE id = $2 AND account_id = $3
			RETURNING `+sloColumns,
			n.ID, mcpID, accountID, n.Name, n.Kind, n.Objective, n.ThresholdMs, n.Tool, n.ErrorKinds, n.WindowDays, n.Channels,
			n.Severity, n.Enabled, n.SnoozedUntil, n.NotifyOnResolve, n.RenotifyMinutes))
		return err
	})
	if isNotFound(err) {
		return alerting.SLO{}, notFound("MCP")
	}
	return created, wrap(err)
}

// SLO implements alerting.SLOService.
func (s *SLOService) SLO(ctx context.Context, accountID, sloID string) (alerting.SLO, error) {
	if !alerting.PlausibleID(sloID) {
		return alerting.SLO{}, notFound("SLO")
	}
	out, err := scanSLO(s.db.Pool.QueryRow(ctx, `SELECT `+sloColumns+` FROM slos WHERE id = $1 AND account_id = $2`, sloID, accountID))
	if isNotFound(err) {
		return alerting.SLO{}, notFound("SLO")
	}
	return out, err
}

// SLOs implements alerting.SLOService.
func (s *SLOService) SLOs(ctx context.Context, accountID, mcpID string) ([]alerting.SLO, error) {
	if err := mcpInAccount(ctx, s.db, accountID, mcpID); err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+sloColumns+` FROM slos WHERE mcp_id = $1 AND account_id = $2 ORDER BY created_at, id`, mcpID, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.SLO, error) { return scanSLO(row) })
	if out == nil {
		out = []alerting.SLO{}
	}
	return out, wrap(err)
}

// UpdateSLO implements alerting.SLOService under the row's lock.
func (s *SLOService) UpdateSLO(ctx context.Context, accountID, sloID string, upd alerting.SLOUpdate) (alerting.SLO, error) {
	if !alerting.PlausibleID(sloID) {
		return alerting.SLO{}, notFound("SLO")
	}
	var out alerting.SLO
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		cur, err := scanSLO(tx.QueryRow(ctx, `SELECT `+sloColumns+` FROM slos WHERE id = $1 AND account_id = $2 FOR UPDATE`, sloID, accountID))
		if isNotFound(err) {
			return notFound("SLO")
		}
		if err != nil {
			return err
		}
		next, err := upd.Apply(cur, time.Now())
		if err != nil {
			return err
		}
		out, err = scanSLO(tx.QueryRow(ctx, `UPDATE slos SET name = $2, objective = $3, threshold_ms = $4, tool = $5, error_kinds = $6,
				window_days = $7, channels = $8, severity = $9, enabled = $10, state = $11, snoozed_until = $12, notify_on_resolve = $13,
				renotify_minutes = $14
			WHERE id = $1 RETURNING `+sloColumns,
			sloID, next.Name, next.Objective, next.ThresholdMs, next.Tool, next.ErrorKinds, next.WindowDays, next.Channels,
			next.Severity, next.Enabled, next.State, next.SnoozedUntil, next.NotifyOnResolve, next.RenotifyMinutes))
		return err
	})
	if err != nil {
		return alerting.SLO{}, wrap(err)
	}
	return out, nil
}

// DeleteSLO implements alerting.SLOService; its deliveries stay.
func (s *SLOService) DeleteSLO(ctx context.Context, accountID, sloID string) error {
	if !alerting.PlausibleID(sloID) {
		return notFound("SLO")
	}
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM slos WHERE id = $1 AND account_id = $2`, sloID, accountID)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("SLO")
	}
	return nil
}

// EnabledSLOs implements alerting.SLOEvalStore.
func (s *SLOService) EnabledSLOs(ctx context.Context) ([]alerting.EvalSLO, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT account_id, `+sloColumns+` FROM slos WHERE enabled`)
	if err != nil {
		return nil, wrap(err)
	}
	now := time.Now()
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.EvalSLO, error) {
		var e alerting.EvalSLO
		if err := row.Scan(append([]any{&e.AccountID}, sloDest(&e.SLO)...)...); err != nil {
			return e, err
		}
		e.SLO = utcSLO(e.SLO, now)
		return e, nil
	})
	return out, wrap(err)
}

// TransitionSLO implements alerting.SLOEvalStore: a conditional UPDATE
// (still enabled, in the state measured from, defined as measured and
// alerted last when it was read: a re-notification moves last_alert_at,
// so two instances cannot both apply one),
// batched with the audience reads, then the history event and the
// deliveries, in one transaction. Deliveries carry the SLO's id and name
// as rule_id and rule_name, so the inbox, the notification log and the
// outbox treat them like a rule's.
func (s *SLOService) TransitionSLO(ctx context.Context, e alerting.EvalSLO, c alerting.SLOChange,
	plan func(alerting.SLO, []alerting.Member, map[string]bool) []alerting.PlannedDelivery) (bool, int, error) {
	var applied bool
	var deliveries int
	rates, err := json.Marshal(c.Figures.BurnRates)
	if err != nil {
		return false, 0, err
	}
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		slo := e.SLO
		var audience []alerting.Member
		connected := map[string]bool{}
		b := &pgx.Batch{}
		b.Queue(`UPDATE slos SET state = $2, last_alert_at = CASE WHEN $3 THEN $4 ELSE last_alert_at END
			WHERE id = $1 AND enabled AND state = $5 AND objective = $6 AND window_days = $7
				AND tool IS NOT DISTINCT FROM $8 AND error_kinds IS NOT DISTINCT FROM $9 AND threshold_ms IS NOT DISTINCT FROM $10
				AND last_alert_at IS NOT DISTINCT FROM $11
			RETURNING name, channels, snoozed_until, notify_on_resolve, severity`,
			e.ID, c.Next, c.Alerted, c.At, e.State, e.Objective, e.WindowDays, e.Tool, e.ErrorKinds, e.ThresholdMs, e.LastAlertAt).Query(func(rows pgx.Rows) error {
			n, err := pgx.ForEachRow(rows, []any{&slo.Name, &slo.Channels, &slo.SnoozedUntil, &slo.NotifyOnResolve, &slo.Severity}, func() error { return nil })
			applied = n.RowsAffected() == 1
			return err
		})
		queueAudience(b, e.AccountID, &audience, connected)
		if err := tx.SendBatch(ctx, b).Close(); err != nil || !applied {
			return err
		}
		slo.SnoozedUntil = utcPtr(slo.SnoozedUntil)
		if _, err := tx.Exec(ctx, `INSERT INTO slo_events (id, account_id, slo_id, state, budget_remaining, burn_rates, created_at, renotify)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ids.New(prefixSLOEvent), e.AccountID, e.ID, c.Next, c.Figures.ErrorBudget.Remaining, rates, c.At, c.Renotify); err != nil {
			return err
		}
		planned := plan(slo, audience, connected)
		deliveries = len(planned)
		return insertDeliveries(ctx, tx, e.AccountID, alerting.Rule{ID: slo.ID, Name: slo.Name, MCPID: slo.MCPID}, planned, c.At)
	})
	if err != nil || !applied {
		deliveries = 0
	}
	return applied, deliveries, wrap(err)
}
