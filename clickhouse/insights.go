package clickhouse

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// Insights implements analytics.Reader (see analytics/INSIGHTS.md). Its
// reads run concurrently: the tools of the range (slowest, failing) and of
// the lookback days before it (idle), the top errors, the client shares
// and the nightly figures.
func (db *Reads) Insights(ctx context.Context, mcpID string, r analytics.Range) (*analytics.Insights, error) {
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

// topErrors merges error_monthly and error_daily over the range by (method, name, type).
func (db *Reads) topErrors(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.TopError, error) {
	from, args := db.rangeRows("error", "error_type, method, name, errors, last_message, last_seen", "mcp_id = ?", []any{mcpID}, r)
	q := fmt.Sprintf(`SELECT error_type, method, name, toInt64(countMerge(errors)) AS n, argMaxMerge(last_message), maxMerge(last_seen) AS ls
		FROM %s
		GROUP BY error_type, method, name
		ORDER BY n DESC, ls DESC, method, name, error_type
		LIMIT %d`, from, analytics.InsightsListLimit)
	out := []analytics.TopError{}
	var lastMs []uint64
	err := db.query(ctx, "top errors", q, args, func() []any {
		e := appendRow(&out)
		return []any{&e.ErrorType, &e.Method, &e.Name, &e.Count, &e.LastMessage, appendRow(&lastMs)}
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].LastSeenAt = msTime(lastMs[i])
	}
	return out, nil
}

// clientShares merges client_monthly and client_daily over the range by (client, version);
// the WITH TOTALS row merges every state, so it holds the range's calls and
// its distinct sessions, the denominators of the shares.
func (db *Reads) clientShares(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.ClientShare, error) {
	from, args := db.rangeRows("client", "client_name, client_version, calls, sessions", "mcp_id = ?", []any{mcpID}, r)
	q := fmt.Sprintf(`SELECT client_name, client_version, toInt64(countMerge(calls)) AS n, toInt64(uniqHLL12Merge(sessions))
		FROM %s
		GROUP BY client_name, client_version WITH TOTALS
		ORDER BY n DESC, client_name, client_version
		LIMIT %d`, from, analytics.InsightsClientLimit)
	out := []analytics.ClientShare{}
	var total analytics.ClientShare
	dest := func(c *analytics.ClientShare) []any {
		return []any{&c.ClientName, &c.ClientVersion, &c.Calls, &c.Sessions}
	}
	if err := db.query(ctx, "clients", q, args, func() []any { return dest(appendRow(&out)) }, dest(&total)...); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].CallShare = analytics.Share(out[i].Calls, total.Calls)
		out[i].SessionShare = analytics.Share(out[i].Sessions, total.Sessions)
		out[i].ProtocolVersions = []string{}
	}
	return out, db.clientProtocols(ctx, mcpID, r, out)
}

// clientProtocols fills in the protocol versions each listed client used
// over the range, by calls descending, from protocol_daily (a few rows per
// client and day).
func (db *Reads) clientProtocols(ctx context.Context, mcpID string, r analytics.Range, clients []analytics.ClientShare) error {
	if len(clients) == 0 {
		return nil
	}
	at := make(map[[2]string]int, len(clients))
	for i, c := range clients {
		at[[2]string{c.ClientName, c.ClientVersion}] = i
	}
	type row struct{ name, version, protocol string }
	var rows []row
	q := fmt.Sprintf(`SELECT client_name, client_version, protocol_version FROM %s.protocol_daily
		WHERE mcp_id = ? AND %s AND protocol_version != ''
		GROUP BY client_name, client_version, protocol_version
		ORDER BY countMerge(calls) DESC, protocol_version`, db.db, dayFilter(r))
	if err := db.query(ctx, "client protocols", q, []any{mcpID}, func() []any {
		p := appendRow(&rows)
		return []any{&p.name, &p.version, &p.protocol}
	}); err != nil {
		return err
	}
	for _, p := range rows {
		if i, ok := at[[2]string{p.name, p.version}]; ok {
			clients[i].ProtocolVersions = append(clients[i].ProtocolVersions, p.protocol)
		}
	}
	return nil
}
