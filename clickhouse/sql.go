package clickhouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse/native"
)

// The span of ClickHouse's Date and DateTime (UInt32 seconds): literals are
// clamped into it, so that a far-away date in a valid request reads as "no
// data" instead of an overflowed value.
var (
	minStoreTime = time.Unix(0, 0).UTC()
	maxStoreTime = time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC)
)

func clampTime(t time.Time) time.Time {
	if t.Before(minStoreTime) {
		return minStoreTime
	}
	if t.After(maxStoreTime) {
		return maxStoreTime
	}
	return t.UTC()
}

// timeLit renders t (to the second) as a DateTime literal in UTC.
func timeLit(t time.Time) string {
	return clampTime(t).Format("toDateTime('2006-01-02 15:04:05', 'UTC')")
}

// dateLit renders the UTC day of t as a Date literal.
func dateLit(t time.Time) string {
	return clampTime(t).Format("toDate('2006-01-02')")
}

// dayFilter selects the rollup rows of the range's days.
func dayFilter(r analytics.Range) string {
	return fmt.Sprintf("day >= %s AND day <= %s", dateLit(r.Lower()), dateLit(r.To))
}

// rangeRows renders, as a subquery for FROM, the rows of a rollup over the
// range's days, for a read that merges them over the whole range: the whole
// calendar months inside the range from the monthly table (name_monthly,
// migration 004), the days of the partial months at its edges from the
// daily one (name_daily). Both hold the same states, so one GROUP BY
// outside merges them together; a year merges about a dozen month states
// and at most 60 day states instead of 365 day states. cols are the
// columns selected from both tables (neither day nor month), cond the
// filter of both, with the placeholders of args; the args to pass follow.
// Without a whole month in the range only the daily table is read.
func (db *core) rangeRows(name, cols, cond string, args []any, r analytics.Range) (string, []any) {
	daily := fmt.Sprintf("SELECT %s FROM %s.%s_daily WHERE %s AND %s", cols, db.db, name, cond, dayFilter(r))
	first, end := wholeMonths(r)
	if !first.Before(end) {
		return "(" + daily + ")", args
	}
	monthly := fmt.Sprintf("SELECT %s FROM %s.%s_monthly WHERE %s AND month >= %s AND month < %s",
		cols, db.db, name, cond, dateLit(first), dateLit(end))
	daily += fmt.Sprintf(" AND (day < %s OR day >= %s)", dateLit(first), dateLit(end))
	return "(" + monthly + " UNION ALL " + daily + ")", append(append([]any{}, args...), args...)
}

// wholeMonths returns the first day of the first calendar month wholly
// inside r and the first day after the last one; first is not before end
// when r holds no whole month.
func wholeMonths(r analytics.Range) (first, end time.Time) {
	from := r.Lower()
	first = time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if !first.Equal(from) {
		first = first.AddDate(0, 1, 0)
	}
	after := r.End()
	end = time.Date(after.Year(), after.Month(), 1, 0, 0, 0, 0, time.UTC)
	return first, end
}

// msTime converts a rollup's Unix milliseconds to a UTC time.
func msTime(ms uint64) time.Time {
	return time.UnixMilli(int64(ms)).UTC()
}

// quantile converts a t-digest result (Float32 on the server) to the
// shortest decimal that identifies it, so that 182.5 reads 182.5 and not
// 182.50000762939453.
func quantile(v float32) float64 {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return 0
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
	return f
}

// latency holds the duration figures merged from a rollup: how many items
// carried a duration, their sum, and the p50, p95, p99 t-digest estimates.
type latency struct {
	n   uint64
	sum float64
	q   []float32
}

// latencies are the figures' mean, median and 95th percentile.
func (l latency) latencies() analytics.Latencies {
	return analytics.Latencies{AvgMs: l.avg(), P50Ms: l.p(0), P95Ms: l.p(1)}
}

func (l latency) avg() *float64 {
	if l.n == 0 {
		return nil
	}
	v := l.sum / float64(l.n)
	return &v
}

// p returns quantile i (0: p50, 1: p95, 2: p99), nil without durations.
func (l latency) p(i int) *float64 {
	if l.n == 0 || i >= len(l.q) {
		return nil
	}
	v := quantile(l.q[i])
	return &v
}

// latencyCols reads a rollup's duration states in the order latency scans.
const latencyCols = "sumMerge(dur_n), sumMerge(dur_sum), quantilesTDigestIfMerge(0.5, 0.95, 0.99)(dur_q)"

// query runs q and scans each row into the destinations that next returns
// for it (called once per row, just before the scan). With totals, the row
// of GROUP BY ... WITH TOTALS is scanned into them: the states of every
// group merged again, so that its distinct counts are true ones.
func (db *core) query(ctx context.Context, op, q string, args []any, next func() []any, totals ...any) error {
	return db.queryOn(ctx, db.conn, op, q, args, next, totals...)
}

// maxRowsKey is the context key of withMaxRows.
type maxRowsKey struct{}

// withMaxRows bounds the rows the reads of ctx read (max_rows_to_read):
// past it, they fail with analytics.TooManyEventsError.
func withMaxRows(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, maxRowsKey{}, n)
}

// wrapRowLimit is wrapErr, but a read stopped by withMaxRows's bound
// (TOO_MANY_ROWS) is analytics.TooManyEventsError.
func wrapRowLimit(op string, maxRows int64, err error) error {
	var ex *clickhouse.Exception
	if maxRows > 0 && errors.As(err, &ex) && ex.Code == codeTooManyRows {
		return fmt.Errorf("clickhouse: %s: %w", op, analytics.TooManyEventsError(maxRows))
	}
	return wrapErr(op, err)
}

// codeTooManyRows is ClickHouse's TOO_MANY_ROWS.
const codeTooManyRows = 158

// readLimit is the setting that bounds a read on the server by
// ReadTimeout (nil without one): the server stops the query
// (TIMEOUT_EXCEEDED, answered as unavailable) instead of holding a
// connection and a core.
func (db *core) readLimit() clickhouse.Settings {
	if secs := int(db.cfg.ReadTimeout / time.Second); secs > 0 {
		return clickhouse.Settings{"max_execution_time": secs}
	}
	return nil
}

// queryOn is query on a given connection (one host of a cluster).
func (db *core) queryOn(ctx context.Context, conn driver.Conn, op, q string, args []any, next func() []any, totals ...any) error {
	limit := db.readLimit()
	maxRows, _ := ctx.Value(maxRowsKey{}).(int64)
	if maxRows > 0 {
		if limit == nil {
			limit = clickhouse.Settings{}
		}
		// read_overflow_mode is throw by default (and, an enum, cannot be
		// sent to 18.16 by the driver, which sends numbers only).
		limit["max_rows_to_read"] = int(maxRows)
	}
	if limit != nil {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(limit))
	}
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return wrapRowLimit(op, maxRows, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(next()...); err != nil {
			return wrapErr(op, err)
		}
	}
	if err := rows.Err(); err != nil {
		return wrapRowLimit(op, maxRows, err)
	}
	if len(totals) > 0 {
		if err := rows.Totals(totals...); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return wrapErr(op+" totals", err)
		}
	}
	return nil
}

// nativeQuery runs q on a connection of the reads' own (Reads.reads),
// decoding each block into result, column by column, and calling onBlock
// with its row count: for reads of many rows of numbers, which the
// driver's Scan converts cell by cell (by reflection for arrays). It
// binds no parameters. Its timeout is query's; a reused connection the
// server dropped while idle is replaced, and the query sent again, when
// it fails before any block.
func (db *Reads) nativeQuery(ctx context.Context, op, q string, result chproto.Results, onBlock func(rows int) error) error {
	settings := db.readLimit()
	if settings != nil {
		if _, ok := ctx.Deadline(); !ok {
			// A connection that stops answering does not hold the read
			// past the server's own limit.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, db.cfg.ReadTimeout+5*time.Second)
			defer cancel()
		}
	}
	blocks := false
	err := db.reads.Run(ctx, func(c *native.Conn) error {
		return c.Query(ctx, "", q, protoSettings(settings), result, func(rows int) error {
			blocks = true
			return onBlock(rows)
		})
	}, func(err error) bool {
		var ex *clickhouse.Exception
		return !blocks && !errors.As(err, &ex)
	})
	if err != nil {
		return wrapErr(op, err)
	}
	if db.knobs.proveQuery != nil {
		db.knobs.proveQuery(ctx, q)
	}
	return nil
}

// appendRow grows *s by one zero element and returns a pointer to it, for
// next functions of query.
func appendRow[T any](s *[]T) *T {
	var zero T
	*s = append(*s, zero)
	return &(*s)[len(*s)-1]
}

// byDate indexes day rows by their YYYY-MM-DD date; a day without a row
// reads as the zero row, which zero-fills a series.
func byDate[T any](rows []T, day func(T) time.Time) map[string]T {
	m := make(map[string]T, len(rows))
	for _, r := range rows {
		m[day(r).Format(analytics.DateLayout)] = r
	}
	return m
}
