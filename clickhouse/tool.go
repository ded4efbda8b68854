package clickhouse

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// Tools implements analytics.Reader from tool_daily.
func (db *Reads) Tools(ctx context.Context, mcpID string, r analytics.Range) (*analytics.ToolList, error) {
	var (
		items   []analytics.ToolSummary
		sizes   map[string]analytics.ResponseSizes
		repeats map[string]int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { items, err = db.toolSummaries(gctx, mcpID, r); return err })
	g.Go(func() (err error) { sizes, err = db.ToolSizes(gctx, mcpID, r); return err })
	g.Go(func() (err error) { repeats, err = db.cappedRepeats(gctx, mcpID, r); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i := range items {
		items[i].ResponseSizes = sizes[items[i].Name]
		items[i].RepeatedCalls = repeatsOf(repeats, items[i].Name)
	}
	return &analytics.ToolList{From: r.FromDate(), To: r.ToDate(), Items: items}, nil
}

// toolSummaries merges tool_monthly and tool_daily over the range (see
// rangeRows): one entry per tool with a call, by calls descending then
// name (byte order).
func (db *Reads) toolSummaries(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.ToolSummary, error) {
	type tool struct {
		name string
		m    merged
		last uint64
	}
	var tools []tool
	from, args := db.rangeRows("tool", "name, calls, errors, sessions, dur_n, dur_sum, dur_q, last_seen", "mcp_id = ?", []any{mcpID}, r)
	q := fmt.Sprintf(`SELECT name, countMerge(calls) AS c, sumMerge(errors), uniqHLL12Merge(sessions), %s, maxMerge(last_seen)
		FROM %s GROUP BY name ORDER BY c DESC, name`, latencyCols, from)
	err := db.query(ctx, "tools", q, args, func() []any {
		t := appendRow(&tools)
		return []any{&t.name, &t.m.calls, &t.m.errors, &t.m.sessions, &t.m.lat.n, &t.m.lat.sum, &t.m.lat.q, &t.last}
	})
	if err != nil {
		return nil, err
	}
	items := make([]analytics.ToolSummary, len(tools))
	for i, t := range tools {
		items[i] = analytics.ToolSummary{
			Name: t.name, LastSeenAt: msTime(t.last), ToolFigures: analytics.ToolFigures{
				CallCounts: analytics.Counts(int64(t.m.calls), int64(t.m.errors)),
				Latencies:  t.m.lat.latencies(), Sessions: int64(t.m.sessions),
			},
		}
	}
	return items, nil
}

// Tool implements analytics.Reader: the tool's day series and totals from
// tool_daily, its error types from error_daily and its clients from
// tool_client_daily, read concurrently.
func (db *Reads) Tool(ctx context.Context, mcpID, name string, r analytics.Range) (*analytics.ToolDetail, error) {
	var (
		days       []merged
		total      merged
		errorTypes = []analytics.ErrorTypeCount{}
		clients    = []analytics.ToolClient{}
		failures   *analytics.ToolFailures
		repeats    map[string]int64
	)
	dest := func(m *merged) []any {
		return []any{&m.day, &m.calls, &m.errors, &m.lat.n, &m.lat.sum, &m.lat.q}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT day, countMerge(calls), sumMerge(errors), %s
			FROM %s.tool_daily WHERE mcp_id = ? AND name = ? AND %s
			GROUP BY day WITH TOTALS ORDER BY day`, latencyCols, db.db, dayFilter(r))
		return db.query(gctx, "tool", q, []any{mcpID, name}, func() []any { return dest(appendRow(&days)) }, dest(&total)...)
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT error_type, toInt64(countMerge(errors)) AS n, argMaxMerge(last_message), maxMerge(last_seen) AS ls
			FROM %s.error_daily WHERE mcp_id = ? AND method = ? AND name = ? AND %s
			GROUP BY error_type ORDER BY n DESC, ls DESC, error_type`, db.db, dayFilter(r))
		var last uint64 // ordering only
		return db.query(gctx, "tool errors", q, []any{mcpID, analytics.MethodToolsCall, name}, func() []any {
			e := appendRow(&errorTypes)
			return []any{&e.ErrorType, &e.Count, &e.LastMessage, &last}
		})
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT client_name, toInt64(sum(calls)) AS n
			FROM %s.tool_client_daily WHERE mcp_id = ? AND name = ? AND %s
			GROUP BY client_name ORDER BY n DESC, client_name`, db.db, dayFilter(r))
		return db.query(gctx, "tool clients", q, []any{mcpID, name}, func() []any {
			c := appendRow(&clients)
			return []any{&c.ClientName, &c.Calls}
		})
	})
	g.Go(func() (err error) { failures, err = db.ToolFailures(gctx, mcpID, name, r); return err })
	g.Go(func() (err error) {
		repeats, err = orNilIfTooMany(db.repeatedCalls(gctx, "mcp_id = ? AND name = ? AND "+tsFilter(r), []any{mcpID, name}))
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	t := &analytics.ToolDetail{
		Name: name, From: r.FromDate(), To: r.ToDate(),
		ToolHeadline: analytics.ToolHeadline{
			CallCounts: analytics.Counts(int64(total.calls), int64(total.errors)),
			Latencies:  total.lat.latencies(), P99Ms: total.lat.p(2),
		},
		Series:     make([]analytics.ToolDay, 0, r.NumDays()),
		ErrorTypes: errorTypes,
		Clients:    clients,
		ErrorKinds: failures.ErrorKinds, ResponseSizes: failures.Sizes, Refusals: failures.Refusals,
		RepeatedCalls: repeatsOf(repeats, name),
	}
	byDay := byDate(days, merged.getDay)
	for i, date := range r.Days() {
		d := byDay[date]
		t.Series = append(t.Series, analytics.ToolDay{Date: date, Start: r.From.AddDate(0, 0, i), Calls: int64(d.calls), Errors: int64(d.errors), P95Ms: d.lat.p(1)})
	}
	return t, nil
}

// ToolHourly implements analytics.Reader from tool_hourly.
func (db *Reads) ToolHourly(ctx context.Context, mcpID, name string, r analytics.Range) ([]analytics.ToolDay, error) {
	var hours []merged
	q := fmt.Sprintf(`SELECT hour, countMerge(calls), sumMerge(errors), %s
		FROM %s.tool_hourly WHERE mcp_id = ? AND name = ? AND %s
		GROUP BY hour ORDER BY hour`, latencyCols, db.db, hourFilter(r))
	if err := db.query(ctx, "tool hourly", q, []any{mcpID, name}, func() []any {
		m := appendRow(&hours)
		return []any{&m.day, &m.calls, &m.errors, &m.lat.n, &m.lat.sum, &m.lat.q}
	}); err != nil {
		return nil, err
	}
	by := byHour(hours)
	series := make([]analytics.ToolDay, 0, r.NumDays()*24)
	for _, h := range r.Hours() {
		d := by[h.Unix()]
		series = append(series, analytics.ToolDay{Date: h.Format(analytics.DateLayout), Start: h,
			Calls: int64(d.calls), Errors: int64(d.errors), P95Ms: d.lat.p(1)})
	}
	return series, nil
}
