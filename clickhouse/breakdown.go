package clickhouse

import (
	"context"
	"fmt"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// breakdownCols are the columns read from breakdown_daily.
const breakdownCols = "dim_value, calls, errors, sessions, users, dur_n, dur_sum, dur_q"

// rawValue is each dimension's value in events.
var rawValue = map[string]string{
	analytics.ByTool: "name", analytics.ByMethod: "CAST(method AS String)", analytics.ByUserID: "user_id",
	analytics.ByClientName: "CAST(client_name AS String)", analytics.ByClientVersion: "CAST(client_version AS String)",
	analytics.ByServerVersion: "CAST(server_version AS String)", analytics.ByErrorType: "CAST(error_type AS String)",
	analytics.ByErrorKind:       "CAST(error_kind AS String)",
	analytics.ByProtocolVersion: "CAST(protocol_version AS String)",
}

// breakdownFigures is one group of a breakdown read.
type breakdownFigures struct {
	value                          string
	calls, errors, sessions, users uint64
	lat                            latency
}

func (b breakdownFigures) figures() analytics.Figures {
	return analytics.Figures{
		CallCounts: analytics.Counts(int64(b.calls), int64(b.errors)), Latencies: b.lat.latencies(),
		Sessions: int64(b.sessions), Users: int64(b.users),
	}
}

// Breakdown implements analytics.Reader. A rollup dimension without
// filters other than status merges its rows of breakdown_daily over the
// range: a few per value and day. user_id, attribute:<key> and the
// filters tool, method and client_name scan the events matching them,
// after a count of those (cheap beside the scan) checked against the row
// budget. Other is a second read of the same rows without the values of
// the first: its distinct counts and percentiles are merged, not summed.
func (db *Reads) Breakdown(ctx context.Context, mcpID string, r analytics.Range, q analytics.BreakdownQuery) (*analytics.Breakdown, error) {
	var s breakdownSource
	if q.Raw() || q.Tool != "" || q.Method != "" || q.ClientName != "" {
		var err error
		if s, err = db.rawBreakdownSource(ctx, mcpID, r, q); err != nil {
			return nil, err
		}
	} else {
		s = db.rollupBreakdownSource(mcpID, r, q)
	}
	from, value, args, where, whereArgs, valueArgs, aggs := s.from, s.value, s.args, s.where, s.whereArgs, s.valueArgs, s.aggs
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

// breakdownSource is what a breakdown reads: the rows (from), the value
// grouped by and the aggregates, with their arguments.
type breakdownSource struct {
	from, value string
	args        []any // arguments of from (a rollup subquery)
	where       string
	whereArgs   []any // arguments of where (the raw scan's filters)
	valueArgs   []any // arguments of value, which comes first in the SELECT
	aggs        string
}

// rawBreakdownSource is the scan of the events matching q, after a count
// of those checked against the row budget.
func (db *Reads) rawBreakdownSource(ctx context.Context, mcpID string, r analytics.Range, q analytics.BreakdownQuery) (breakdownSource, error) {
	s := breakdownSource{where: "1"}
	budget := db.knobs.rawRows
	if budget <= 0 {
		budget = analytics.MaxRawBreakdownRows
	}
	cond, cargs := breakdownFilters(q, "mcp_id = ? AND "+tsFilter(r), []any{mcpID})
	var n []uint64
	cq := fmt.Sprintf("SELECT count() FROM %s.events WHERE %s", db.db, cond)
	if err := db.query(ctx, "breakdown count", cq, cargs, func() []any { return []any{appendRow(&n)} }); err != nil {
		return s, err
	}
	if len(n) == 1 && n[0] > uint64(budget) {
		return s, telemetry.FieldError(telemetry.ERANGETOOLARGE, "query.from",
			"This breakdown (by %s, or filtered by tool, method or client_name) scans the matching events, at most %d; %s to %s holds %d: narrow the range.",
			q.By, budget, r.FromDate(), r.ToDate(), n[0])
	}
	s.from, s.where, s.whereArgs = db.db+".events", cond, cargs
	s.value = rawValue[q.By]
	if q.AttributeKey != "" {
		s.value, s.valueArgs = "attr_values[indexOf(attr_keys, ?)]", []any{q.AttributeKey}
	}
	s.aggs = `count() AS c, sum(is_error), uniqHLL12(session_id), uniqHLL12(user_key),
			sum(has_duration), sum(duration_ms), quantilesTDigestIf(0.5, 0.95, 0.99)(duration_ms, has_duration)`
	return s, nil
}

// rollupBreakdownSource merges the rows of the dimension's rollup over
// the range.
func (db *Reads) rollupBreakdownSource(mcpID string, r analytics.Range, q analytics.BreakdownQuery) breakdownSource {
	s := breakdownSource{where: "1"}
	cond := "mcp_id = ? AND dim = ? AND " + dayFilter(r)
	table, cols := "breakdown_daily", breakdownCols
	s.args = []any{mcpID, q.By}
	if q.By == analytics.ByProtocolVersion { // its own rollup (migration 006)
		cond = "mcp_id = ? AND " + dayFilter(r)
		table, cols, s.args = "protocol_daily", "protocol_version AS dim_value"+breakdownCols[len("dim_value"):], []any{mcpID}
	}
	switch q.Status {
	case analytics.StatusError:
		cond += " AND is_error = 1"
	case analytics.StatusOK:
		cond += " AND is_error = 0"
	}
	s.from = fmt.Sprintf("(SELECT %s FROM %s.%s WHERE %s)", cols, db.db, table, cond)
	s.value = "dim_value"
	s.aggs = "countMerge(calls) AS c, sumMerge(errors), uniqHLL12Merge(sessions), uniqHLL12Merge(users), " + latencyCols
	return s
}

// breakdownFilters adds the query's filters, and the restriction of its
// dimension (tool: tools/call items; error_type: error items), to cond.
// Both the rollups and events have the columns named.
func breakdownFilters(q analytics.BreakdownQuery, cond string, args []any) (string, []any) {
	if q.By == analytics.ByTool || q.Tool != "" {
		cond += " AND method = ?"
		args = append(args, analytics.MethodToolsCall)
	}
	if q.By == analytics.ByErrorType || q.By == analytics.ByErrorKind || q.Status == analytics.StatusError {
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
// (which the primary key prunes on), from the first day the account keeps.
func tsFilter(r analytics.Range) string {
	return fmt.Sprintf("ts >= %s AND ts < %s", timeLit(r.Lower()), timeLit(r.End()))
}
