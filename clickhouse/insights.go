package clickhouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// Insights implements analytics.Reader (see analytics/INSIGHTS.md). Its
// reads run concurrently: the tools of the range (slowest, failing) and of
// the lookback days before it (idle), the top errors, the client shares
// and the nightly figures.
func (db *DB) Insights(ctx context.Context, mcpID string, r analytics.Range) (*analytics.Insights, error) {
	in := &analytics.Insights{
		From: r.FromDate(), To: r.ToDate(),
		SlowestTools: analytics.SlowestTools{Limit: analytics.InsightsListLimit, Items: []analytics.SlowTool{}},
		FailingTools: analytics.FailingTools{MinCalls: analytics.FailingMinCalls, Limit: analytics.InsightsListLimit, Items: []analytics.FailingTool{}},
		TopErrors:    analytics.TopErrors{Limit: analytics.InsightsListLimit},
		Clients:      analytics.ClientShares{Limit: analytics.InsightsClientLimit},
		IdleTools:    analytics.IdleTools{LookbackDays: analytics.IdleLookbackDays, Items: []analytics.IdleTool{}},
	}
	var tools, before []analytics.ToolSummary
	var nightly *analytics.Nightly
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		tools, err = db.toolSummaries(gctx, mcpID, r)
		return err
	})
	g.Go(func() (err error) {
		before, err = db.toolSummaries(gctx, mcpID, r.Before(analytics.IdleLookbackDays))
		return err
	})
	g.Go(func() (err error) {
		in.TopErrors.Items, err = db.topErrors(gctx, mcpID, r)
		return err
	})
	g.Go(func() (err error) {
		in.Clients.Items, err = db.clientShares(gctx, mcpID, r)
		return err
	})
	g.Go(func() (err error) {
		nightly, in.NightlyAsOf, err = db.Nightly(gctx, mcpID)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	in.Nightly = *nightly
	in.SlowestTools.Items = slowestTools(tools)
	in.FailingTools.Items = failingTools(tools)
	in.IdleTools.Items = idleTools(tools, before)
	return in, nil
}

// slowestTools ranks the tools with durations by p95, then name.
func slowestTools(tools []analytics.ToolSummary) []analytics.SlowTool {
	out := []analytics.SlowTool{}
	for _, t := range tools {
		if t.P95Ms != nil {
			out = append(out, analytics.SlowTool{Name: t.Name, Calls: t.Calls, P95Ms: *t.P95Ms, P50Ms: *t.P50Ms})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].P95Ms != out[j].P95Ms {
			return out[i].P95Ms > out[j].P95Ms
		}
		return out[i].Name < out[j].Name
	})
	return capped(out, analytics.InsightsListLimit)
}

// failingTools ranks the tools with enough calls and an error by error
// rate, then calls, then name.
func failingTools(tools []analytics.ToolSummary) []analytics.FailingTool {
	out := []analytics.FailingTool{}
	for _, t := range tools {
		if t.Calls >= analytics.FailingMinCalls && t.Errors > 0 {
			out = append(out, analytics.FailingTool{Name: t.Name, Calls: t.Calls, Errors: t.Errors, ErrorRate: t.ErrorRate})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ErrorRate != b.ErrorRate {
			return a.ErrorRate > b.ErrorRate
		}
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.Name < b.Name
	})
	return capped(out, analytics.InsightsListLimit)
}

// idleTools keeps the tools called before the range and not in it, by
// calls before descending, then name.
func idleTools(inRange, before []analytics.ToolSummary) []analytics.IdleTool {
	called := make(map[string]bool, len(inRange))
	for _, t := range inRange {
		called[t.Name] = true
	}
	out := []analytics.IdleTool{}
	for _, t := range before { // already by calls descending, then name
		if !called[t.Name] {
			out = append(out, analytics.IdleTool{Name: t.Name, LastSeenAt: t.LastSeenAt, CallsBefore: t.Calls})
		}
	}
	return out
}

func capped[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// topErrors merges error_daily over the range by (method, name, type).
func (db *DB) topErrors(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.TopError, error) {
	q := fmt.Sprintf(`SELECT error_type, method, name, countMerge(errors) AS n, argMaxMerge(last_message), maxMerge(last_seen) AS ls
		FROM %s.error_daily WHERE mcp_id = ? AND %s
		GROUP BY error_type, method, name
		ORDER BY n DESC, ls DESC, method, name, error_type
		LIMIT %d`, db.db, dayFilter(r), analytics.InsightsListLimit)
	rows, err := db.conn.Query(ctx, q, mcpID)
	if err != nil {
		return nil, wrapErr("top errors", err)
	}
	defer rows.Close()
	out := []analytics.TopError{}
	for rows.Next() {
		var e analytics.TopError
		var n, last uint64
		if err := rows.Scan(&e.ErrorType, &e.Method, &e.Name, &n, &e.LastMessage, &last); err != nil {
			return nil, wrapErr("top errors", err)
		}
		e.Count, e.LastSeenAt = int64(n), msTime(last)
		out = append(out, e)
	}
	return out, wrapErr("top errors", rows.Err())
}

// clientShares merges client_daily over the range by (client, version);
// the WITH TOTALS row merges every state, so it holds the range's calls and
// its distinct sessions, the denominators of the shares.
func (db *DB) clientShares(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.ClientShare, error) {
	q := fmt.Sprintf(`SELECT client_name, client_version, countMerge(calls) AS n, uniqMerge(sessions)
		FROM %s.client_daily WHERE mcp_id = ? AND %s
		GROUP BY client_name, client_version WITH TOTALS
		ORDER BY n DESC, client_name, client_version
		LIMIT %d`, db.db, dayFilter(r), analytics.InsightsClientLimit)
	rows, err := db.conn.Query(ctx, q, mcpID)
	if err != nil {
		return nil, wrapErr("clients", err)
	}
	defer rows.Close()
	out := []analytics.ClientShare{}
	for rows.Next() {
		var c analytics.ClientShare
		var calls, sessions uint64
		if err := rows.Scan(&c.ClientName, &c.ClientVersion, &calls, &sessions); err != nil {
			return nil, wrapErr("clients", err)
		}
		c.Calls, c.Sessions = int64(calls), int64(sessions)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("clients", err)
	}
	var name, version string
	var totalCalls, totalSessions uint64
	if err := rows.Totals(&name, &version, &totalCalls, &totalSessions); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrapErr("clients totals", err)
	}
	for i := range out {
		out[i].CallShare = analytics.Share(out[i].Calls, int64(totalCalls))
		out[i].SessionShare = analytics.Share(out[i].Sessions, int64(totalSessions))
	}
	return out, nil
}
