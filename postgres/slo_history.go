package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
)

var _ alerting.SLOHistory = (*SLOService)(nil)

// SLOEvents implements alerting.SLOHistory: newest first, paginated as a
// rule's history. A deleted SLO's history goes with it.
func (s *SLOService) SLOEvents(ctx context.Context, accountID, sloID string, f alerting.RuleEventFilter) (alerting.SLOEventPage, error) {
	cur, err := alerting.ParseDeliveryCursor(f.Cursor)
	if err != nil {
		return alerting.SLOEventPage{}, err
	}
	if _, err := s.SLO(ctx, accountID, sloID); err != nil {
		return alerting.SLOEventPage{}, err
	}
	q := sqlBuilder{args: []any{sloID, accountID}}
	q.sql.WriteString(`SELECT id, state, renotify, budget_remaining, burn_rates, created_at FROM slo_events WHERE slo_id = $1 AND account_id = $2`)
	q.after(cur)
	q.page(f.Limit)
	rows, err := s.db.Pool.Query(ctx, q.sql.String(), q.args...)
	if err != nil {
		return alerting.SLOEventPage{}, wrap(err)
	}
	page := alerting.SLOEventPage{Items: []alerting.SLOEvent{}}
	var e alerting.SLOEvent
	var renotify bool
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.State, &renotify, &e.BudgetRemaining, &e.BurnRates, &e.At}, func() error {
		e.At, e.Kind = utc(e.At), alerting.SLOEventKind(e.State, renotify)
		page.Items = append(page.Items, e)
		e.BurnRates = nil
		return nil
	})
	if err != nil {
		return alerting.SLOEventPage{}, wrap(err)
	}
	page.Items, page.NextCursor = trimPage(page.Items, f.Limit, func(e alerting.SLOEvent) alerting.DeliveryCursor {
		return alerting.DeliveryCursor{CreatedAt: e.At, ID: e.ID}
	})
	return page, nil
}
