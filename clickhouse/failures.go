package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// The failure reads (docs/failures.md): error kinds and answer sizes from
// failure_daily, refusals from refusal_daily (migration 009); repeats and
// unknown tools from events, since both depend on each item (its place in
// its session, its name against the inventory).

var _ analytics.FailureReader = (*Reads)(nil)

// sizeCols reads failure_daily's size states: the p50 and p95 estimates
// and the largest size (-1 when no item carried one).
const sizeCols = "quantilesTDigestIfMerge(0.5, 0.95)(resp_q), maxMerge(resp_max)"

// sizes holds what sizeCols reads.
type sizes struct {
	q   []float32
	max int64
}

func (s sizes) figures() analytics.ResponseSizes {
	if s.max < 0 || len(s.q) < 2 {
		return analytics.ResponseSizes{}
	}
	p50, p95, m := quantile(s.q[0]), quantile(s.q[1]), s.max
	return analytics.ResponseSizes{P50: &p50, P95: &p95, Max: &m}
}

// ToolFailures implements analytics.FailureReader.
func (db *Reads) ToolFailures(ctx context.Context, mcpID, name string, r analytics.Range) (*analytics.ToolFailures, error) {
	f := &analytics.ToolFailures{ErrorKinds: []analytics.ErrorKindCount{}, Refusals: []analytics.Refusal{}}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT error_kind, toInt64(countMerge(calls)) AS n FROM %s.failure_daily
			WHERE mcp_id = ? AND method = 'tools/call' AND name = ? AND error_kind != '' AND %s
			GROUP BY error_kind ORDER BY n DESC, error_kind`, db.db, dayFilter(r))
		return db.query(gctx, "tool error kinds", q, []any{mcpID, name}, func() []any {
			k := appendRow(&f.ErrorKinds)
			return []any{&k.ErrorKind, &k.Count}
		})
	})
	g.Go(func() error {
		var rows []sizes
		q := fmt.Sprintf(`SELECT %s FROM %s.failure_daily
			WHERE mcp_id = ? AND method = 'tools/call' AND name = ? AND %s GROUP BY mcp_id`, sizeCols, db.db, dayFilter(r))
		if err := db.query(gctx, "tool sizes", q, []any{mcpID, name}, func() []any {
			s := appendRow(&rows)
			return []any{&s.q, &s.max}
		}); err != nil {
			return err
		}
		if len(rows) > 0 {
			f.Sizes = rows[0].figures()
		}
		return nil
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT message, toInt64(sum(calls)) AS n FROM %s.refusal_daily
			WHERE mcp_id = ? AND name = ? AND %s
			GROUP BY message ORDER BY n DESC, message LIMIT %d`, db.db, dayFilter(r), analytics.MaxRefusals)
		return db.query(gctx, "tool refusals", q, []any{mcpID, name}, func() []any {
			x := appendRow(&f.Refusals)
			return []any{&x.Message, &x.Count}
		})
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return f, nil
}

// ToolSizes implements analytics.FailureReader.
func (db *Reads) ToolSizes(ctx context.Context, mcpID string, r analytics.Range) (map[string]analytics.ResponseSizes, error) {
	type row struct {
		name string
		s    sizes
	}
	var rows []row
	q := fmt.Sprintf(`SELECT name, %s FROM %s.failure_daily
		WHERE mcp_id = ? AND method = 'tools/call' AND %s GROUP BY name`, sizeCols, db.db, dayFilter(r))
	if err := db.query(ctx, "tool sizes", q, []any{mcpID}, func() []any {
		x := appendRow(&rows)
		return []any{&x.name, &x.s.q, &x.s.max}
	}); err != nil {
		return nil, err
	}
	out := make(map[string]analytics.ResponseSizes, len(rows))
	for _, x := range rows {
		out[x.name] = x.s.figures()
	}
	return out, nil
}

// ErrorKinds implements analytics.FailureReader.
func (db *Reads) ErrorKinds(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.ErrorKindCount, error) {
	kinds := []analytics.ErrorKindCount{}
	q := fmt.Sprintf(`SELECT error_kind, toInt64(countMerge(calls)) AS n FROM %s.failure_daily
		WHERE mcp_id = ? AND error_kind != '' AND %s
		GROUP BY error_kind ORDER BY n DESC, error_kind`, db.db, dayFilter(r))
	err := db.query(ctx, "error kinds", q, []any{mcpID}, func() []any {
		k := appendRow(&kinds)
		return []any{&k.ErrorKind, &k.Count}
	})
	return kinds, err
}

// repeatKeyExpr is analytics.RepeatKey in SQL.
const repeatKeyExpr = "if(args_hash = '', '', concat(name, '\\0', args_hash))"

// RepeatedCalls implements analytics.FailureReader over the range's
// tools/call items, session by session in timeline order (time, then the
// log record): a call is a repeat when its key (analytics.RepeatKey) is
// not empty and equals the previous call's.
// More than the raw budget of events (rawBudget) fails with
// analytics.TooManyEventsError.
func (db *Reads) RepeatedCalls(ctx context.Context, mcpID string, r analytics.Range) (map[string]int64, error) {
	return db.repeatedCalls(ctx, "mcp_id = ? AND "+tsFilter(r), []any{mcpID})
}

// rawBudget bounds ctx's reads by the budget of the raw reads of repeats
// and unknown tools.
func (db *Reads) rawBudget(ctx context.Context) context.Context {
	if db.knobs.rawRows > 0 {
		return withMaxRows(ctx, int64(db.knobs.rawRows))
	}
	return withMaxRows(ctx, analytics.MaxRawFailureEvents)
}

// cappedRepeats is RepeatedCalls, nil when the range holds too many
// events.
func (db *Reads) cappedRepeats(ctx context.Context, mcpID string, r analytics.Range) (map[string]int64, error) {
	return orNilIfTooMany(db.RepeatedCalls(ctx, mcpID, r))
}

// orNilIfTooMany turns a read of repeats stopped by the raw budget into
// nil (other errors are returned).
func orNilIfTooMany(m map[string]int64, err error) (map[string]int64, error) {
	if errors.Is(err, analytics.ErrTooManyEvents) {
		return nil, nil
	}
	if err == nil && m == nil {
		m = map[string]int64{}
	}
	return m, err
}

// repeatsOf is a tool's repeats out of cappedRepeats' answer: null when
// it was nil.
func repeatsOf(repeats map[string]int64, name string) *int64 {
	if repeats == nil {
		return nil
	}
	n := repeats[name]
	return &n
}

// repeatedCalls counts repeats by tool among the tools/call events that
// cond selects, within the raw budget.
func (db *Reads) repeatedCalls(ctx context.Context, cond string, args []any) (map[string]int64, error) {
	ctx = db.rawBudget(ctx)
	q := fmt.Sprintf(`SELECT name, toInt64(sum(rep)) FROM (
			SELECT arraySort(x -> (x.1, x.2, x.3), groupArray((%[1]s, ingest_node, ingest_seq, %[5]s, name, %[2]s))) AS seq,
				arrayMap(x -> x.6, seq) AS keys,
				arrayMap(x -> x.5, seq) AS names,
				arrayMap((k, p) -> toUInt8(k != '' AND k = p), keys, arrayPushFront(arrayPopBack(keys), '')) AS reps
			FROM %[3]s.events
			WHERE %[4]s AND method = 'tools/call'
			GROUP BY session_id
		) ARRAY JOIN names AS name, reps AS rep
		WHERE rep = 1
		GROUP BY name`, atExpr, repeatKeyExpr, db.db, cond, EventID)
	type row struct {
		name string
		n    int64
	}
	var rows []row
	if err := db.query(ctx, "repeated calls", q, args, func() []any {
		x := appendRow(&rows)
		return []any{&x.name, &x.n}
	}); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, x := range rows {
		out[x.name] = x.n
	}
	return out, nil
}

// UnknownTools implements analytics.FailureReader from events: the
// range's items of the MCP with error_kind unknown_tool, and its
// tools/call items whose name is not listed (when listed is not empty).
func (db *Reads) UnknownTools(ctx context.Context, mcpID string, r analytics.Range, listed []string) ([]analytics.UnknownTool, error) {
	ctx = db.rawBudget(ctx)
	cond, args := unknownCond(mcpID, tsFilter(r), listed)
	type row struct {
		name           string
		calls, session int64
		last           uint64
	}
	var rows []row
	q := fmt.Sprintf(`SELECT name, toInt64(count()) AS c, toInt64(uniqExact(session_id)), max(%s)
		FROM %s.events WHERE %s GROUP BY name ORDER BY c DESC, name LIMIT %d`, atExpr, db.db, cond, analytics.MaxUnknownTools)
	if err := db.query(ctx, "unknown tools", q, args, func() []any {
		x := appendRow(&rows)
		return []any{&x.name, &x.calls, &x.session, &x.last}
	}); err != nil {
		return nil, err
	}
	items := make([]analytics.UnknownTool, len(rows))
	byName := make(map[string]*analytics.UnknownTool, len(rows))
	top := make([]any, len(rows))
	for i, x := range rows {
		items[i] = analytics.UnknownTool{Name: x.name, Calls: x.calls, Sessions: x.session, LastSeenAt: msTime(x.last),
			Clients: []analytics.ToolClient{}}
		byName[x.name] = &items[i]
		top[i] = x.name
	}
	if len(rows) == 0 {
		return items, nil
	}
	type client struct {
		name, client string
		calls        int64
	}
	var clients []client
	q = fmt.Sprintf(`SELECT name, CAST(client_name AS String), toInt64(count()) AS c
		FROM %s.events WHERE %s AND name IN ? GROUP BY name, client_name ORDER BY c DESC, client_name`, db.db, cond)
	if err := db.query(ctx, "unknown tool clients", q, append(args, clickhouse.GroupSet{Value: top}), func() []any {
		x := appendRow(&clients)
		return []any{&x.name, &x.client, &x.calls}
	}); err != nil {
		return nil, err
	}
	for _, c := range clients {
		if it := byName[c.name]; it != nil {
			it.Clients = append(it.Clients, analytics.ToolClient{ClientName: c.client, Calls: c.calls})
		}
	}
	return items, nil
}

// unknownCond selects the MCP's events of the time condition span that
// name an unknown tool: error_kind unknown_tool and, when listed is not
// empty, tools/call items of a name not listed.
func unknownCond(mcpID, span string, listed []string) (string, []any) {
	cond := "mcp_id = ? AND " + span + " AND (error_kind = 'unknown_tool'"
	args := []any{mcpID}
	if len(listed) > 0 {
		names := make([]any, len(listed))
		for i, n := range listed {
			names[i] = n
		}
		cond += " OR (method = 'tools/call' AND name NOT IN ?)"
		args = append(args, clickhouse.GroupSet{Value: names})
	}
	return cond + ")", args
}

var _ analytics.UnknownCallReader = (*Reads)(nil)

// UnknownCallCounts implements analytics.UnknownCallReader in one read of
// events: the total, then the most called names.
func (db *Reads) UnknownCallCounts(ctx context.Context, mcpID string, from, to time.Time, listed []string) (map[string]int64, error) {
	ctx = db.rawBudget(ctx)
	cond, args := unknownCond(mcpID, msRange(from, to), listed)
	q := fmt.Sprintf(`SELECT toUInt8(0) AS total, CAST(name AS String) AS n, toInt64(count()) AS c FROM %[1]s.events WHERE %[2]s
			GROUP BY n ORDER BY c DESC, n LIMIT %[3]d
		UNION ALL SELECT toUInt8(1) AS total, '' AS n, toInt64(count()) AS c FROM %[1]s.events WHERE %[2]s`, db.db, cond, analytics.MaxUnknownTools)
	type row struct {
		total uint8
		name  string
		n     int64
	}
	var rows []row
	if err := db.query(ctx, "unknown call counts", q, append(args, args...), func() []any {
		x := appendRow(&rows)
		return []any{&x.total, &x.name, &x.n}
	}); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, x := range rows {
		switch {
		case x.total == 1 && x.n > 0:
			out[""] = x.n
		case x.total == 0 && x.name != "":
			out[x.name] = x.n
		}
	}
	return out, nil
}

// CalledTools implements analytics.FailureReader from failure_daily.
func (db *Reads) CalledTools(ctx context.Context, mcpID string, r analytics.Range) ([]string, error) {
	var names []string
	q := fmt.Sprintf(`SELECT DISTINCT name FROM %s.failure_daily
		WHERE mcp_id = ? AND method = 'tools/call' AND error_kind = '' AND %s LIMIT %d`, db.db, dayFilter(r), analytics.MaxInventoryTools)
	err := db.query(ctx, "called tools", q, []any{mcpID}, func() []any { return []any{appendRow(&names)} })
	return names, err
}
