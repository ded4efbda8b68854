package clickhouse

import (
	"context"
	"fmt"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// breakdownCols are the columns read from breakdown_daily and
// breakdown_monthly (see rangeRows).
const breakdownCols = "dim_value, calls, errors, sessions, users, dur_n, dur_sum, dur_q"

// rawValue is each dimension's value in events.
var rawValue = map[string]string{
	analytics.ByTool: "name", analytics.ByMethod: "CAST(method AS String)", analytics.ByUserID: "user_id",
	analytics.ByClientName: "CAST(client_name AS String)", analytics.ByClientVersion: "CAST(client_version AS String)",
	analytics.ByServerVersion: "CAST(server_version AS String)", analytics.ByErrorType: "CAST(error_type AS String)",
}

// breakdownFigures is one group of a breakdown read.
type breakdownFigures struct {
	value                          string
	calls, errors, sessions, users uint64
	lat                            latency
}

func (b breakdownFigures) figures() analytics.Figures {
	return analytics.Figures{
		Calls: int64(b.calls), Errors: int64(b.errors), ErrorRate: analytics.ErrorRate(int64(b.errors), int64(b.calls)),
		AvgMs: b.lat.avg(), P50Ms: b.lat.p(0), P95Ms: b.lat.p(1),
		Sessions: int64(b.sessions), Users: int64(b.users),
	}
}

// Breakdown implements analytics.Reader. A rollup dimension with at most
// one of the filters tool, method and client_name (and any status) merges
// breakdown_monthly and breakdown_daily over the range (rangeRows): the
// rows of its (filter, dimension), whose states cover exactly the items of
// each value under that filter. user_id, attribute:<key> and combined
// filters scan events, after a count of the range's events (a
// primary-key range read) checked against the row budget. Other is a
// second read of the same rows without the values of the first: its
// distinct counts and percentiles are merged, not summed.
func (db *DB) Breakdown(ctx context.Context, mcpID string, r analytics.Range, q analytics.BreakdownQuery) (*analytics.Breakdown, error) {
	var (
		from, value string
		args        []any // arguments of from (a rollup subquery)
		where       = "1"
		whereArgs   []any // arguments of where (the raw scan's filters)
		valueArgs   []any // arguments of value, which comes first in the SELECT
		aggs        string
	)
	filterKey, filterValue, rollup := rollupFilter(q)
	if !rollup {
		budget := db.rawRows
		if budget <= 0 {
			budget = analytics.MaxRawBreakdownRows
		}
		var n []uint64
		cq := fmt.Sprintf("SELECT count() FROM %s.events WHERE mcp_id = ? AND %s", db.db, tsFilter(r))
		if err := db.query(ctx, "breakdown count", cq, []any{mcpID}, func() []any { return []any{appendRow(&n)} }); err != nil {
			return nil, err
		}
		if len(n) == 1 && n[0] > uint64(budget) {
			return nil, telemetry.FieldError(telemetry.ERANGETOOLARGE, "query.from",
				"This breakdown (by %s, or with several filters) scans raw events, at most %d; %s to %s holds %d for this MCP: narrow the range.",
				q.By, budget, r.FromDate(), r.ToDate(), n[0])
		}
		cond, cargs := breakdownFilters(q, "mcp_id = ? AND "+tsFilter(r), []any{mcpID})
		from, where, whereArgs = db.db+".events", cond, cargs
		value = rawValue[q.By]
		if q.AttributeKey != "" {
			value, valueArgs = "attr_values[indexOf(attr_keys, ?)]", []any{q.AttributeKey}
		}
		aggs = `count() AS c, sum(is_error), uniqHLL12(session_id), uniqHLL12(user_key),
			sum(has_duration), sum(duration_ms), quantilesTDigestIf(0.5, 0.95, 0.99)(duration_ms, has_duration)`
	} else {
		cond := "mcp_id = ? AND filter_key = ? AND filter_value = ? AND dim = ?"
		switch q.Status {
		case analytics.StatusError:
			cond += " AND is_error = 1"
		case analytics.StatusOK:
			cond += " AND is_error = 0"
		}
		from, args = db.rangeRows("breakdown", breakdownCols, cond, []any{mcpID, filterKey, filterValue, q.By}, r)
		value = "dim_value"
		aggs = "countMerge(calls) AS c, sumMerge(errors), uniqHLL12Merge(sessions), uniqHLL12Merge(users), " + latencyCols
	}
	scan := func(b *breakdownFigures, withValue bool) []any {
		d := []any{&b.calls, &b.errors, &b.sessions, &b.users, &b.lat.n, &b.lat.sum, &b.lat.q}
		if withValue {
			return append([]any{&b.value}, d...)
		}
		return d
	}
	var top []breakdownFigures
	// Arguments in the order of their placeholders: value (in the
	// SELECT), from, where, then what the WHERE adds.
	head := append(append(append([]any{}, valueArgs...), args...), whereArgs...)
	tq := fmt.Sprintf("SELECT %s AS v, %s FROM %s WHERE %s GROUP BY v ORDER BY c DESC, v LIMIT %d", value, aggs, from, where, q.Limit)
	targs := head
	if len(q.Only) > 0 {
		tq = fmt.Sprintf("SELECT %s AS v, %s FROM %s WHERE %s AND has(?, %s) GROUP BY v ORDER BY c DESC, v", value, aggs, from, where, value)
		targs = append(append(append([]any{}, head...), q.Only), valueArgs...)
	}
	if err := db.query(ctx, "breakdown", tq, targs, func() []any {
		return scan(appendRow(&top), true)
	}); err != nil {
		return nil, err
	}
	b := &analytics.Breakdown{From: r.FromDate(), To: r.ToDate(), By: q.By, Items: make([]analytics.BreakdownItem, len(top))}
	values := make([]string, len(top))
	for i, t := range top {
		b.Items[i] = analytics.BreakdownItem{Value: t.value, Figures: t.figures()}
		values[i] = t.value
	}
	if len(top) < q.Limit || len(q.Only) > 0 {
		return b, nil
	}
	var rest []breakdownFigures
	oq := fmt.Sprintf("SELECT %s FROM %s WHERE %s AND NOT has(?, %s)", aggs, from, where, value)
	oargs := append(append(append(append([]any{}, args...), whereArgs...), values), valueArgs...)
	if err := db.query(ctx, "breakdown other", oq, oargs, func() []any { return scan(appendRow(&rest), false) }); err != nil {
		return nil, err
	}
	if len(rest) == 1 && rest[0].calls > 0 {
		f := rest[0].figures()
		b.Other = &f
	}
	return b, nil
}

// rollupFilter returns the breakdown rollups' filter_key and filter_value
// for q, and whether the rollups serve q at all: a rollup dimension with at
// most one of the filters tool, method, client_name (tool with method
// tools/call is one filter).
func rollupFilter(q analytics.BreakdownQuery) (key, value string, ok bool) {
	if q.Raw() {
		return "", "", false
	}
	method := q.Method
	if q.Tool != "" && method == analytics.MethodToolsCall {
		method = ""
	}
	n := 0
	for _, f := range [][2]string{{"tool", q.Tool}, {"method", method}, {"client_name", q.ClientName}} {
		if f[1] != "" {
			n++
			key, value = f[0], f[1]
		}
	}
	return key, value, n <= 1
}

// breakdownFilters adds the query's filters, and the restriction of its
// dimension (tool: tools/call items; error_type: error items), to cond.
// Both the rollups and events have the columns named.
func breakdownFilters(q analytics.BreakdownQuery, cond string, args []any) (string, []any) {
	if q.By == analytics.ByTool || q.Tool != "" {
		cond += " AND method = ?"
		args = append(args, analytics.MethodToolsCall)
	}
	if q.By == analytics.ByErrorType || q.Status == analytics.StatusError {
		cond += " AND is_error = 1"
	}
	if q.Status == analytics.StatusOK {
		cond += " AND is_error = 0"
	}
	if q.Tool != "" {
		cond += " AND name = ?"
		args = append(args, q.Tool)
	}
	if q.Method != "" {
		cond += " AND method = ?"
		args = append(args, q.Method)
	}
	if q.ClientName != "" {
		cond += " AND client_name = ?"
		args = append(args, q.ClientName)
	}
	return cond, args
}

// tsFilter selects the events of the range's days on the raw time column
// (which the primary key prunes on).
func tsFilter(r analytics.Range) string {
	return fmt.Sprintf("ts >= %s AND ts < %s", timeLit(r.From), timeLit(r.End()))
}
