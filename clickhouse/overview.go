package clickhouse

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// merged is a rollup group merged over a day or over the range (the WITH
// TOTALS row): the figures the overview and tool reads share.
type merged struct {
	day                            time.Time
	calls, errors, sessions, users uint64
	lat                            latency
}

func (m merged) getDay() time.Time { return m.day }

// Overview implements analytics.Reader from mcp_daily, day rows and their
// totals in one query, and the nightly figures beside it.
func (db *Reads) Overview(ctx context.Context, mcpID string, r analytics.Range) (*analytics.Overview, error) {
	var (
		days    []merged
		total   merged
		nightly *analytics.Nightly
		asOf    *string
		kinds   []analytics.ErrorKindCount
		repeats map[string]int64
	)
	dest := func(m *merged) []any {
		return []any{&m.day, &m.calls, &m.errors, &m.sessions, &m.users, &m.lat.n, &m.lat.sum, &m.lat.q}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT day, countMerge(calls), sumMerge(errors), uniqHLL12Merge(sessions), uniqHLL12Merge(users), %s
			FROM %s.mcp_daily WHERE mcp_id = ? AND %s
			GROUP BY day WITH TOTALS ORDER BY day`, latencyCols, db.db, dayFilter(r))
		return db.query(gctx, "overview", q, []any{mcpID}, func() []any { return dest(appendRow(&days)) }, dest(&total)...)
	})
	g.Go(func() (err error) {
		nightly, asOf, err = db.Nightly(gctx, mcpID)
		return err
	})
	g.Go(func() (err error) { kinds, err = db.ErrorKinds(gctx, mcpID, r); return err })
	g.Go(func() (err error) { repeats, err = db.cappedRepeats(gctx, mcpID, r); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	o := &analytics.Overview{
		MCPID: mcpID,
		From:  r.FromDate(),
		To:    r.ToDate(),
		OverviewFigures: analytics.OverviewFigures{
			CallCounts: analytics.Counts(int64(total.calls), int64(total.errors)),
			Sessions:   int64(total.sessions),
			Users:      int64(total.users),
			Latencies:  total.lat.latencies(),
			P99Ms:      total.lat.p(2),
		},
		Series:      make([]analytics.OverviewDay, 0, r.NumDays()),
		Nightly:     *nightly,
		NightlyAsOf: asOf,
		ErrorKinds:  kinds,
	}
	if repeats != nil {
		var sum int64
		for _, n := range repeats {
			sum += n
		}
		o.RepeatedCalls = &sum
	}
	byDay := byDate(days, merged.getDay)
	for i, date := range r.Days() {
		d := byDay[date]
		o.Series = append(o.Series, analytics.OverviewDay{
			Date: date, Start: r.From.AddDate(0, 0, i), Calls: int64(d.calls), Errors: int64(d.errors),
			Sessions: int64(d.sessions), Users: int64(d.users), P95Ms: d.lat.p(1),
		})
	}
	return o, nil
}

// OverviewHourly implements analytics.Reader from mcp_hourly.
func (db *Reads) OverviewHourly(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.OverviewDay, error) {
	var hours []merged
	q := fmt.Sprintf(`SELECT hour, countMerge(calls), sumMerge(errors), uniqHLL12Merge(sessions), uniqHLL12Merge(users), %s
		FROM %s.mcp_hourly WHERE mcp_id = ? AND %s
		GROUP BY hour ORDER BY hour`, latencyCols, db.db, hourFilter(r))
	if err := db.query(ctx, "overview hourly", q, []any{mcpID}, func() []any {
		m := appendRow(&hours)
		return []any{&m.day, &m.calls, &m.errors, &m.sessions, &m.users, &m.lat.n, &m.lat.sum, &m.lat.q}
	}); err != nil {
		return nil, err
	}
	by := byHour(hours)
	series := make([]analytics.OverviewDay, 0, r.NumDays()*24)
	for _, h := range r.Hours() {
		d := by[h.Unix()]
		series = append(series, analytics.OverviewDay{
			Date: h.Format(analytics.DateLayout), Start: h, Calls: int64(d.calls), Errors: int64(d.errors),
			Sessions: int64(d.sessions), Users: int64(d.users), P95Ms: d.lat.p(1),
		})
	}
	return series, nil
}

// hourFilter selects the hourly rollup rows of the range's days the
// account keeps.
func hourFilter(r analytics.Range) string {
	return fmt.Sprintf("hour >= %s AND hour < %s", timeLit(r.Lower()), timeLit(r.End()))
}

// byHour indexes hour rows by their Unix second; an hour without a row
// reads as the zero row, which zero-fills a series.
func byHour(rows []merged) map[int64]merged {
	m := make(map[int64]merged, len(rows))
	for _, r := range rows {
		m[r.day.Unix()] = r
	}
	return m
}
