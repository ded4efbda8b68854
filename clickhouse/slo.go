package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"

	"github.com/mcpscope/telemetry/analytics"
)

// SLO indicators (docs/slos.md). The short burn windows are read from
// events (to the millisecond), the 3-day window and the SLO's own from
// the SLO rollups of migration 012 (slo_daily for whole days, slo_hourly
// for the hours at either end). Every statement returns, per MCP, key
// ("" for the whole MCP, a tool name for that tool's tools/call items),
// bucket (a band edge in minutes, or a window length in hours) and error
// kind: the items, the errors, the items with a duration and those at or
// under each latency threshold the batch's SLOs use. What is bad is then
// decided per SLO in Go (sliAgg.counts), so SLOs of one MCP with
// different error kinds or thresholds share the rows.

var _ analytics.SLIReader = (*Reads)(nil)

// sliBadErrors is the bad count of an availability indicator: the errors
// but those of a kind the SLO leaves out (an error without a kind, stored
// before kinds existed, counts bad).
func sliBadErrors(errors int64, byKind map[string]int64, kinds []string) int64 {
	for k, n := range byKind {
		if k != "" && !slices.Contains(kinds, k) {
			errors -= n
		}
	}
	return errors
}

// sliAgg is what an SLI statement counted for one MCP, key and window.
type sliAgg struct {
	calls, errors, timed int64
	kinds                map[string]int64 // errors by kind
	le                   []int64          // timed items at or under each of sliBatch.thresholds
}

func (a *sliAgg) add(c *sliCols, i int) {
	a.calls += int64(c.calls[i])
	a.timed += int64(c.timed[i])
	if e := int64(c.errors[i]); e > 0 {
		a.errors += e
		if a.kinds == nil {
			a.kinds = map[string]int64{}
		}
		a.kinds[c.kind.Row(i)] += e
	}
	if a.le == nil {
		a.le = make([]int64, len(c.le))
	}
	for t := range c.le {
		a.le[t] += int64(c.le[t][i])
	}
}

// counts is the query's indicator from a's counts.
func (a *sliAgg) counts(q analytics.SLIQuery, thresholds []float64) analytics.SLICounts {
	if a == nil {
		return analytics.SLICounts{}
	}
	if q.ThresholdMs > 0 {
		t := slices.Index(thresholds, q.ThresholdMs)
		return analytics.SLICounts{Total: a.timed, Bad: a.timed - a.le[t]}
	}
	return analytics.SLICounts{Total: a.calls, Bad: sliBadErrors(a.errors, a.kinds, q.ErrorKinds)}
}

type sliKey struct {
	mcp, key string
	n        int // minutes or hours
}

// sliCols are the columns of every SLI statement.
type sliCols struct {
	mcp, key, kind       chproto.ColStr
	bucket               chproto.ColUInt32
	calls, errors, timed chproto.ColUInt64
	le                   []chproto.ColUInt64
}

func (c *sliCols) results() chproto.Results {
	r := chproto.Results{{Name: "mcp_id", Data: &c.mcp}, {Name: "key", Data: &c.key}, {Name: "bucket", Data: &c.bucket},
		{Name: "kind", Data: &c.kind}, {Name: "n_calls", Data: &c.calls}, {Name: "n_errors", Data: &c.errors}, {Name: "n_timed", Data: &c.timed}}
	for t := range c.le {
		r = append(r, chproto.ResultColumn{Name: "n_le" + strconv.Itoa(t), Data: &c.le[t]})
	}
	return r
}

// sliBatch is the part of a statement its queries decide: their MCPs,
// tools and latency thresholds, each once.
type sliBatch struct {
	ids, tools []string
	thresholds []float64
}

func newSLIBatch(qs []analytics.SLIQuery) (sliBatch, error) {
	var b sliBatch
	for _, q := range qs {
		b.ids = append(b.ids, q.MCPID)
		if q.Tool != "" {
			b.tools = append(b.tools, q.Tool)
		}
		if q.ThresholdMs > 0 {
			if !slices.Contains(analytics.LatencyLadderMs, q.ThresholdMs) {
				return b, fmt.Errorf("clickhouse: latency threshold %v ms is not on the ladder", q.ThresholdMs)
			}
			b.thresholds = append(b.thresholds, q.ThresholdMs)
		}
	}
	for _, s := range []*[]string{&b.ids, &b.tools} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	slices.Sort(b.thresholds)
	b.thresholds = slices.Compact(b.thresholds)
	return b, nil
}

// keyExpr is the statement's key of a row whose tool is tool: the tool
// when a query asks for it, else "" (the row counts for its MCP only).
func (b sliBatch) keyExpr(tool string) string {
	if len(b.tools) == 0 {
		return "''"
	}
	quoted := make([]string, len(b.tools))
	for i, t := range b.tools {
		quoted[i] = QuoteString(t)
	}
	return fmt.Sprintf("if(has(CAST([%s] AS Array(String)), %s), %s, '')", strings.Join(quoted, ","), tool, tool)
}

// sums is the statement's counts: from events (raw) or a rollup's rows.
func (b sliBatch) sums(raw bool) string {
	var s strings.Builder
	if raw {
		s.WriteString("count() AS n_calls, toUInt64(sum(is_error)) AS n_errors, toUInt64(sum(has_duration)) AS n_timed")
	} else {
		s.WriteString("sum(calls) AS n_calls, sum(errors) AS n_errors, sum(timed) AS n_timed")
	}
	for t, ms := range b.thresholds {
		if raw {
			fmt.Fprintf(&s, ", toUInt64(sum(has_duration AND duration_ms <= %d)) AS n_le%d", int(ms), t)
		} else {
			fmt.Fprintf(&s, ", sum(le_%d) AS n_le%d", int(ms), t)
		}
	}
	return s.String()
}

// run runs an SLI statement, calling add for every row.
func (db *Reads) sliRun(ctx context.Context, op, q string, b sliBatch, add func(c *sliCols, i int)) error {
	cols := sliCols{le: make([]chproto.ColUInt64, len(b.thresholds))}
	return db.nativeQuery(ctx, op, q, cols.results(), func(rows int) error {
		for i := range rows {
			add(&cols, i)
		}
		return nil
	})
}

// SLICounts implements analytics.SLIReader: per batch of queries (cut
// where the distinct MCPs and tools they name would pass sliLiteralBytes),
// one statement on events for the minute windows and one on the SLO
// rollups for the hour windows, run side by side. Hour windows must be
// whole days.
func (db *Reads) SLICounts(ctx context.Context, to time.Time, minutes, hours []int, qs []analytics.SLIQuery) ([]analytics.SLIReading, error) {
	out := make([]analytics.SLIReading, len(qs))
	for start := 0; start < len(qs); {
		n := sliBatchLen(qs[start:], sliLiteralBytes)
		if err := db.sliCountsBatch(ctx, to, minutes, hours, qs[start:start+n], out[start:start+n]); err != nil {
			return nil, err
		}
		start += n
	}
	return out, nil
}

// sliLiteralBytes bounds the MCP ids and tool names of one batch.
const sliLiteralBytes = 96 << 10

// sliBatchLen is how many of qs (at least one) one batch takes: as many as
// keep the distinct MCP ids and tool names they name, each named once in
// the statements, within limit bytes.
func sliBatchLen(qs []analytics.SLIQuery, limit int) int {
	n, size := 0, 0
	ids, tools := map[string]bool{}, map[string]bool{"": true}
	for ; n < len(qs); n++ {
		add := 0
		if !ids[qs[n].MCPID] {
			add += len(qs[n].MCPID) + 8 // quotes, comma, slack
		}
		if !tools[qs[n].Tool] {
			add += len(qs[n].Tool) + 8
		}
		if n > 0 && size+add > limit {
			break
		}
		ids[qs[n].MCPID], tools[qs[n].Tool] = true, true
		size += add
	}
	return n
}

func (db *Reads) sliCountsBatch(ctx context.Context, to time.Time, minutes, hours []int, qs []analytics.SLIQuery, out []analytics.SLIReading) error {
	b, err := newSLIBatch(qs)
	if err != nil {
		return err
	}
	lengths := slices.Clone(hours)
	for _, q := range qs {
		lengths = append(lengths, q.WindowDays*24)
	}
	lengths = bandEdges(lengths)
	edges := bandEdges(minutes)
	var short, long map[sliKey]*sliAgg
	errs := make([]error, 2)
	var wg sync.WaitGroup
	if len(edges) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			short, errs[0] = db.sliMinutes(ctx, to, edges, b)
		}()
	}
	if len(lengths) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			long, errs[1] = db.sliHours(ctx, to, lengths, b)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, q := range qs {
		out[i] = analytics.SLIReading{Minutes: map[int]analytics.SLICounts{}, Hours: map[int]analytics.SLICounts{}}
		for _, m := range minutes {
			out[i].Minutes[m] = short[sliKey{q.MCPID, q.Tool, m}].counts(q, b.thresholds)
		}
		for _, h := range append(slices.Clone(hours), q.WindowDays*24) {
			out[i].Hours[h] = long[sliKey{q.MCPID, q.Tool, h}].counts(q, b.thresholds)
		}
	}
	return nil
}

// addRow adds row i under its MCP's key "" and, for a tool, the tool's
// key, in the window of n minutes or hours.
func addRow(aggs map[sliKey]*sliAgg, c *sliCols, i, n int) {
	mcp, key := c.mcp.Row(i), c.key.Row(i)
	for _, k := range [2]string{"", key} {
		a := aggs[sliKey{mcp, k, n}]
		if a == nil {
			a = &sliAgg{}
			aggs[sliKey{mcp, k, n}] = a
		}
		a.add(c, i)
		if key == "" {
			break
		}
	}
}

// sliMinutes counts the minute windows (edges, ascending) ending at to
// from events, by band as the rule pass's window reads do
// (WindowSetsBatch): a row of band edge e adds to every window of at
// least e minutes.
func (db *Reads) sliMinutes(ctx context.Context, to time.Time, edges []int, b sliBatch) (map[sliKey]*sliAgg, error) {
	minute := minuteOf(strconv.FormatInt(to.UnixMilli(), 10))
	longest := time.Duration(edges[len(edges)-1]) * time.Minute
	q := fmt.Sprintf(`SELECT mcp_id, %s AS key, arrayElement(CAST(%s AS Array(UInt32)), %s) AS bucket,
			CAST(error_kind AS String) AS kind, %s
		FROM %s.events
		PREWHERE %s
		WHERE mcp_id IN %s
		GROUP BY mcp_id, key, bucket, kind`,
		b.keyExpr("if(method = 'tools/call', name, '')"), intList(edges), bandOf(minute, edges), b.sums(true),
		db.db, msRange(to.Add(-longest), to), idLiteral(b.ids))
	out := map[sliKey]*sliAgg{}
	err := db.sliRun(ctx, "sli minutes", q, b, func(c *sliCols, i int) {
		for _, m := range edges {
			if m >= int(c.bucket[i]) {
				addRow(out, c, i, m)
			}
		}
	})
	return out, err
}

// sliHours counts the windows of lengths hours (whole days, ascending)
// that end at the end of the clock hour holding to: the whole days of
// each from slo_daily, its first (partial) day's hours and the current
// day's from slo_hourly, each table in one aggregation (ARRAY JOIN of the
// lengths over its rows), UNION ALL.
func (db *Reads) sliHours(ctx context.Context, to time.Time, lengths []int, b sliBatch) (map[sliKey]*sliAgg, error) {
	end := to.UTC().Truncate(time.Hour).Add(time.Hour)
	today := end.Truncate(24 * time.Hour) // whole days end here; [today, end) is hourly
	var hs, los, wfs, days []string
	ranges := []string{fmt.Sprintf("(hour >= %s AND hour < %s)", timeLit(today), timeLit(end))}
	for _, h := range lengths {
		if h%24 != 0 {
			return nil, fmt.Errorf("clickhouse: SLI hour window %d is not whole days", h)
		}
		start := end.Add(-time.Duration(h) * time.Hour)
		wf := start.Truncate(24 * time.Hour) // the first whole day
		if wf.Before(start) {
			wf = wf.Add(24 * time.Hour)
		}
		hs = append(hs, strconv.Itoa(h))
		los, wfs = append(los, timeLit(start)), append(wfs, timeLit(wf))
		days = append(days, wf.Format("toDate('2006-01-02')"))
		if wf.After(start) {
			ranges = append(ranges, fmt.Sprintf("(hour >= %s AND hour < %s)", timeLit(start), timeLit(wf)))
		}
	}
	h := "CAST([" + strings.Join(hs, ",") + "] AS Array(UInt32)) AS h"
	ids := idLiteral(b.ids)
	q := fmt.Sprintf(`SELECT mcp_id, %[1]s AS key, h AS bucket, CAST(error_kind AS String) AS kind, %[2]s
		FROM %[3]s.slo_daily ARRAY JOIN %[4]s, [%[5]s] AS wf
		WHERE mcp_id IN %[6]s AND day >= %[7]s AND day < %[8]s AND day >= wf
		GROUP BY mcp_id, key, bucket, kind
		UNION ALL
		SELECT mcp_id, %[1]s AS key, h AS bucket, CAST(error_kind AS String) AS kind, %[2]s
		FROM %[3]s.slo_hourly ARRAY JOIN %[4]s, [%[9]s] AS lo, [%[10]s] AS hi
		WHERE mcp_id IN %[6]s AND (%[11]s) AND ((hour >= lo AND hour < hi) OR hour >= %[12]s)
		GROUP BY mcp_id, key, bucket, kind`,
		b.keyExpr("tool"), b.sums(false), db.db, h, strings.Join(days, ","), ids,
		days[len(days)-1], today.Format("toDate('2006-01-02')"),
		strings.Join(los, ","), strings.Join(wfs, ","), strings.Join(ranges, " OR "), timeLit(today))
	out := map[sliKey]*sliAgg{}
	err := db.sliRun(ctx, "sli hours", q, b, func(c *sliCols, i int) { addRow(out, c, i, int(c.bucket[i])) })
	return out, err
}

// SLISeries implements analytics.SLIReader from slo_hourly, by UTC day
// (the first day from the window's first hour).
func (db *Reads) SLISeries(ctx context.Context, to time.Time, q analytics.SLIQuery) ([]analytics.SLIPoint, error) {
	b, err := newSLIBatch([]analytics.SLIQuery{q})
	if err != nil {
		return nil, err
	}
	end := to.UTC().Truncate(time.Hour).Add(time.Hour)
	lo := end.Add(-time.Duration(q.WindowDays) * 24 * time.Hour)
	sql := fmt.Sprintf(`SELECT mcp_id, %s AS key, toUInt32(toRelativeDayNum(hour)) AS bucket, CAST(error_kind AS String) AS kind, %s
		FROM %s.slo_hourly
		WHERE mcp_id IN %s AND hour >= %s AND hour < %s
		GROUP BY mcp_id, key, bucket, kind`, b.keyExpr("tool"), b.sums(false), db.db, idLiteral(b.ids), timeLit(lo), timeLit(end))
	by := map[sliKey]*sliAgg{}
	if err := db.sliRun(ctx, "sli series", sql, b, func(c *sliCols, i int) { addRow(by, c, i, int(c.bucket[i])) }); err != nil {
		return nil, err
	}
	var out []analytics.SLIPoint
	for d := lo.Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
		c := by[sliKey{q.MCPID, q.Tool, int(d.Unix() / 86400)}].counts(q, b.thresholds)
		out = append(out, analytics.SLIPoint{Day: d, Total: c.Total, Bad: c.Bad})
	}
	return out, nil
}
