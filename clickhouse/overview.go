package clickhouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// dayCounts is one row of mcp_daily merged over a day, or over the range
// (the WITH TOTALS row).
type dayCounts struct {
	day                            time.Time
	calls, errors, sessions, users uint64
	lat                            latency
}

// Overview implements analytics.Reader from mcp_daily; the totals are the
// day rows' states merged again (WITH TOTALS), so the range's distinct
// counts are true distinct counts, not sums of daily ones.
func (db *DB) Overview(ctx context.Context, mcpID string, r analytics.Range) (*analytics.Overview, error) {
	var (
		days    []dayCounts
		total   dayCounts
		nightly *analytics.Nightly
		asOf    *string
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT day, countMerge(calls), sumMerge(errors), uniqMerge(sessions), uniqMerge(users), %s
			FROM %s.mcp_daily WHERE mcp_id = ? AND %s
			GROUP BY day WITH TOTALS ORDER BY day`, latencyCols, db.db, dayFilter(r))
		rows, err := db.conn.Query(gctx, q, mcpID)
		if err != nil {
			return wrapErr("overview", err)
		}
		defer rows.Close()
		for rows.Next() {
			var d dayCounts
			if err := rows.Scan(&d.day, &d.calls, &d.errors, &d.sessions, &d.users, &d.lat.n, &d.lat.sum, &d.lat.q); err != nil {
				return wrapErr("overview", err)
			}
			days = append(days, d)
		}
		if err := rows.Err(); err != nil {
			return wrapErr("overview", err)
		}
		err = rows.Totals(&total.day, &total.calls, &total.errors, &total.sessions, &total.users, &total.lat.n, &total.lat.sum, &total.lat.q)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return wrapErr("overview totals", err)
		}
		return nil
	})
	g.Go(func() (err error) {
		nightly, asOf, err = db.Nightly(gctx, mcpID)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	byDay := make(map[string]dayCounts, len(days))
	for _, d := range days {
		byDay[d.day.Format(analytics.DateLayout)] = d
	}
	o := &analytics.Overview{
		MCPID:       mcpID,
		From:        r.FromDate(),
		To:          r.ToDate(),
		Calls:       int64(total.calls),
		Errors:      int64(total.errors),
		ErrorRate:   analytics.ErrorRate(int64(total.errors), int64(total.calls)),
		Sessions:    int64(total.sessions),
		Users:       int64(total.users),
		AvgMs:       total.lat.avg(),
		P50Ms:       total.lat.p(0),
		P95Ms:       total.lat.p(1),
		P99Ms:       total.lat.p(2),
		Series:      make([]analytics.OverviewDay, 0, r.NumDays()),
		Nightly:     *nightly,
		NightlyAsOf: asOf,
	}
	for _, date := range r.Days() {
		d := byDay[date]
		o.Series = append(o.Series, analytics.OverviewDay{
			Date: date, Calls: int64(d.calls), Errors: int64(d.errors),
			Sessions: int64(d.sessions), Users: int64(d.users), P95Ms: d.lat.p(1),
		})
	}
	return o, nil
}
