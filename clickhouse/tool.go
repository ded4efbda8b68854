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

// Tools implements analytics.Reader from tool_daily.
func (db *DB) Tools(ctx context.Context, mcpID string, r analytics.Range) (*analytics.ToolList, error) {
	items, err := db.toolSummaries(ctx, mcpID, r)
	if err != nil {
		return nil, err
	}
	return &analytics.ToolList{From: r.FromDate(), To: r.ToDate(), Items: items}, nil
}

// toolSummaries merges tool_daily over the range: one entry per tool with
// a call, by calls descending then name (byte order).
func (db *DB) toolSummaries(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.ToolSummary, error) {
	q := fmt.Sprintf(`SELECT name, countMerge(calls) AS c, sumMerge(errors), uniqMerge(sessions), %s, maxMerge(last_seen)
		FROM %s.tool_daily WHERE mcp_id = ? AND %s
		GROUP BY name ORDER BY c DESC, name`, latencyCols, db.db, dayFilter(r))
	rows, err := db.conn.Query(ctx, q, mcpID)
	if err != nil {
		return nil, wrapErr("tools", err)
	}
	defer rows.Close()
	items := []analytics.ToolSummary{}
	for rows.Next() {
		var (
			name                  string
			calls, errs, sessions uint64
			lat                   latency
			last                  uint64
		)
		if err := rows.Scan(&name, &calls, &errs, &sessions, &lat.n, &lat.sum, &lat.q, &last); err != nil {
			return nil, wrapErr("tools", err)
		}
		items = append(items, analytics.ToolSummary{
			Name: name, Calls: int64(calls), Errors: int64(errs),
			ErrorRate: analytics.ErrorRate(int64(errs), int64(calls)),
			AvgMs:     lat.avg(), P50Ms: lat.p(0), P95Ms: lat.p(1),
			Sessions: int64(sessions), LastSeenAt: msTime(last),
		})
	}
	return items, wrapErr("tools", rows.Err())
}

// Tool implements analytics.Reader: the tool's day series and totals from
// tool_daily, its error types from error_daily and its clients from
// tool_client_daily, read concurrently.
func (db *DB) Tool(ctx context.Context, mcpID, name string, r analytics.Range) (*analytics.ToolDetail, error) {
	type toolDay struct {
		day         time.Time
		calls, errs uint64
		lat         latency
	}
	var (
		days       []toolDay
		total      toolDay
		errorTypes = []analytics.ErrorTypeCount{}
		clients    = []analytics.ToolClient{}
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT day, countMerge(calls), sumMerge(errors), %s
			FROM %s.tool_daily WHERE mcp_id = ? AND name = ? AND %s
			GROUP BY day WITH TOTALS ORDER BY day`, latencyCols, db.db, dayFilter(r))
		rows, err := db.conn.Query(gctx, q, mcpID, name)
		if err != nil {
			return wrapErr("tool", err)
		}
		defer rows.Close()
		for rows.Next() {
			var d toolDay
			if err := rows.Scan(&d.day, &d.calls, &d.errs, &d.lat.n, &d.lat.sum, &d.lat.q); err != nil {
				return wrapErr("tool", err)
			}
			days = append(days, d)
		}
		if err := rows.Err(); err != nil {
			return wrapErr("tool", err)
		}
		err = rows.Totals(&total.day, &total.calls, &total.errs, &total.lat.n, &total.lat.sum, &total.lat.q)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return wrapErr("tool totals", err)
		}
		return nil
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT error_type, countMerge(errors) AS n, argMaxMerge(last_message), maxMerge(last_seen) AS ls
			FROM %s.error_daily WHERE mcp_id = ? AND method = ? AND name = ? AND %s
			GROUP BY error_type ORDER BY n DESC, ls DESC, error_type`, db.db, dayFilter(r))
		rows, err := db.conn.Query(gctx, q, mcpID, analytics.MethodToolsCall, name)
		if err != nil {
			return wrapErr("tool errors", err)
		}
		defer rows.Close()
		for rows.Next() {
			var e analytics.ErrorTypeCount
			var n, last uint64
			if err := rows.Scan(&e.ErrorType, &n, &e.LastMessage, &last); err != nil {
				return wrapErr("tool errors", err)
			}
			e.Count = int64(n)
			errorTypes = append(errorTypes, e)
		}
		return wrapErr("tool errors", rows.Err())
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT client_name, sum(calls) AS n
			FROM %s.tool_client_daily WHERE mcp_id = ? AND name = ? AND %s
			GROUP BY client_name ORDER BY n DESC, client_name`, db.db, dayFilter(r))
		rows, err := db.conn.Query(gctx, q, mcpID, name)
		if err != nil {
			return wrapErr("tool clients", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c analytics.ToolClient
			var n uint64
			if err := rows.Scan(&c.ClientName, &n); err != nil {
				return wrapErr("tool clients", err)
			}
			c.Calls = int64(n)
			clients = append(clients, c)
		}
		return wrapErr("tool clients", rows.Err())
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	byDay := make(map[string]toolDay, len(days))
	for _, d := range days {
		byDay[d.day.Format(analytics.DateLayout)] = d
	}
	t := &analytics.ToolDetail{
		Name: name, From: r.FromDate(), To: r.ToDate(),
		Calls: int64(total.calls), Errors: int64(total.errs),
		ErrorRate: analytics.ErrorRate(int64(total.errs), int64(total.calls)),
		AvgMs:     total.lat.avg(), P50Ms: total.lat.p(0), P95Ms: total.lat.p(1), P99Ms: total.lat.p(2),
		Series:     make([]analytics.ToolDay, 0, r.NumDays()),
		ErrorTypes: errorTypes,
		Clients:    clients,
	}
	for _, date := range r.Days() {
		d := byDay[date]
		t.Series = append(t.Series, analytics.ToolDay{Date: date, Calls: int64(d.calls), Errors: int64(d.errs), P95Ms: d.lat.p(1)})
	}
	return t, nil
}
