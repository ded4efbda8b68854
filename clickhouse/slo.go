package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
)

// SLO indicators (docs/slos.md). What counts as a bad item of an
// availability SLO is decided in ONE place, sliBadErrors: until the
// rollups carry error_kind (the failures work, clickhouse migration 009,
// adds it to events and the daily rollups, not yet to mcp_hourly and
// tool_hourly), every error counts bad whatever the SLO's error_kinds say.
// Once the hourly rollups and the window reads carry per-kind error
// counts, sliBadErrors is the function to switch to them.

// sliBadErrors is the bad count of an availability indicator from a
// window's errors; kinds is the SLO's error_kinds (not yet applied: see
// above).
func sliBadErrors(errors int64, kinds []string) int64 {
	_ = kinds
	return errors
}

var _ analytics.SLIReader = (*Reads)(nil)

// SLICounts implements analytics.SLIReader: the minute windows in one
// batch of window reads on events (as the rule pass reads them: a few rows
// per MCP and key whatever the windows), the hour windows from mcp_hourly
// and tool_hourly in one statement (a few hundred rollup rows per MCP and
// key for a 28-day window, summed in ClickHouse into one row per window
// length).
func (db *Reads) SLICounts(ctx context.Context, to time.Time, minutes, hours []int, qs []analytics.SLIQuery) ([]analytics.SLIReading, error) {
	out := make([]analytics.SLIReading, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	reqs := map[string]analytics.WindowRequest{}
	for _, q := range qs {
		reqs[q.MCPID] = analytics.WindowRequest{Minutes: minutes}
	}
	sets, err := db.WindowSets(ctx, to, reqs)
	if err != nil {
		return nil, err
	}
	long, err := db.sliHours(ctx, to, hours, qs)
	if err != nil {
		return nil, err
	}
	for i, q := range qs {
		out[i] = analytics.SLIReading{Minutes: map[int]analytics.SLICounts{}, Hours: map[int]analytics.SLICounts{}}
		for _, m := range minutes {
			st := sets[q.MCPID][m][q.Tool]
			out[i].Minutes[m] = analytics.SLICounts{Total: st.Calls, Bad: sliBadErrors(st.Errors, q.ErrorKinds)}
		}
		for _, h := range append(slices.Clone(hours), q.WindowDays*24) {
			c := long[sliKey{q.MCPID, q.Tool, h}]
			out[i].Hours[h] = analytics.SLICounts{Total: c.Total, Bad: sliBadErrors(c.Bad, q.ErrorKinds)}
		}
	}
	return out, nil
}

type sliKey struct {
	mcp, key string
	hours    int
}

// sliSource is a statement over the hourly rows of the queries' MCPs
// (mcp_hourly, under the empty key) and tools (tool_hourly, under the
// tool's name) in [lo, hi): one aggregation per table, UNION ALL, each
// row mcp_id, key, then sel (over join's rows, cond added to WHERE),
// grouped by mcp_id, key and group. One level of aggregation: on 18.16 an
// outer aggregation over a subquery's states costs more to analyse than
// the read.
func (db *Reads) sliSource(qs []analytics.SLIQuery, lo, hi time.Time, sel, join, cond, group string) (string, []any) {
	// Each MCP and tool once: many SLOs share them.
	var mcps, toolMCPs, tools []any
	seenMCP, seenToolMCP, seenTool := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, q := range qs {
		switch {
		case q.Tool == "" && !seenMCP[q.MCPID]:
			seenMCP[q.MCPID] = true
			mcps = append(mcps, q.MCPID)
		case q.Tool != "":
			if !seenToolMCP[q.MCPID] {
				seenToolMCP[q.MCPID] = true
				toolMCPs = append(toolMCPs, q.MCPID)
			}
			if !seenTool[q.Tool] {
				seenTool[q.Tool] = true
				tools = append(tools, q.Tool)
			}
		}
	}
	hours := fmt.Sprintf("hour >= %s AND hour < %s%s", timeLit(lo), timeLit(hi), cond)
	var parts []string
	var args []any
	if len(mcps) > 0 {
		parts = append(parts, fmt.Sprintf(`SELECT mcp_id, '' AS key, %s FROM %s.mcp_hourly %s
			WHERE mcp_id IN ? AND %s GROUP BY mcp_id%s`, sel, db.db, join, hours, group))
		args = append(args, clickhouse.GroupSet{Value: mcps})
	}
	if len(tools) > 0 {
		parts = append(parts, fmt.Sprintf(`SELECT mcp_id, name AS key, %s FROM %s.tool_hourly %s
			WHERE mcp_id IN ? AND name IN ? AND %s GROUP BY mcp_id, name%s`, sel, db.db, join, hours, group))
		args = append(args, clickhouse.GroupSet{Value: toolMCPs}, clickhouse.GroupSet{Value: tools})
	}
	return strings.Join(parts, " UNION ALL "), args
}

// sliHours sums each query's hourly rows over every length of hours
// (theirs and the queries' windows): the last h clock hours, the current
// one included, end at the end of the hour holding to.
func (db *Reads) sliHours(ctx context.Context, to time.Time, hours []int, qs []analytics.SLIQuery) (map[sliKey]analytics.SLICounts, error) {
	// The statement names its MCPs and tools as literals: a batch is cut
	// where they would pass sliLiteralBytes, well under ClickHouse's
	// max_query_size, whatever the tool names' length.
	out := map[sliKey]analytics.SLICounts{}
	for len(qs) > 0 {
		n, size := 0, 0
		for ; n < len(qs) && (n == 0 || size+len(qs[n].MCPID)+len(qs[n].Tool) <= sliLiteralBytes); n++ {
			size += len(qs[n].MCPID) + len(qs[n].Tool) + 8
		}
		part, err := db.sliHoursBatch(ctx, to, hours, qs[:n])
		if err != nil {
			return nil, err
		}
		for k, v := range part {
			out[k] = v
		}
		qs = qs[n:]
	}
	return out, nil
}

// sliLiteralBytes bounds the literals of one sli hours statement.
const sliLiteralBytes = 96 << 10

func (db *Reads) sliHoursBatch(ctx context.Context, to time.Time, hours []int, qs []analytics.SLIQuery) (map[sliKey]analytics.SLICounts, error) {
	lengths := slices.Clone(hours)
	for _, q := range qs {
		if h := q.WindowDays * 24; !slices.Contains(lengths, h) {
			lengths = append(lengths, h)
		}
	}
	slices.Sort(lengths)
	end := to.UTC().Truncate(time.Hour).Add(time.Hour)
	lit := make([]string, len(lengths))
	for i, h := range lengths {
		lit[i] = strconv.Itoa(h)
	}
	q, args := db.sliSource(qs, end.Add(-time.Duration(lengths[len(lengths)-1])*time.Hour), end,
		"toUInt32(h) AS hs, toInt64(countMerge(calls)), toInt64(sumMerge(errors))",
		"ARRAY JOIN ["+strings.Join(lit, ", ")+"] AS h", fmt.Sprintf(" AND toUInt32(hour) >= %d - h * 3600", end.Unix()), ", h")
	type row struct {
		mcp, key string
		h        uint32
		c        analytics.SLICounts
	}
	var rows []row
	if err := db.query(ctx, "sli hours", q, args, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcp, &r.key, &r.h, &r.c.Total, &r.c.Bad}
	}); err != nil {
		return nil, err
	}
	out := make(map[sliKey]analytics.SLICounts, len(rows))
	for _, r := range rows {
		out[sliKey{r.mcp, r.key, int(r.h)}] = r.c
	}
	return out, nil
}

// SLISeries implements analytics.SLIReader from the hourly rollups, by
// UTC day.
func (db *Reads) SLISeries(ctx context.Context, to time.Time, q analytics.SLIQuery) ([]analytics.SLIPoint, error) {
	end := to.UTC().Truncate(time.Hour).Add(time.Hour)
	lo := end.Add(-time.Duration(q.WindowDays) * 24 * time.Hour)
	sql, args := db.sliSource([]analytics.SLIQuery{q}, lo, end,
		"toDate(hour) AS d, toInt64(countMerge(calls)), toInt64(sumMerge(errors))", "", "", ", d")
	var rows []analytics.SLIPoint
	var mcp, key string
	if err := db.query(ctx, "sli series", sql, args, func() []any {
		p := appendRow(&rows)
		return []any{&mcp, &key, &p.Day, &p.Total, &p.Bad}
	}); err != nil {
		return nil, err
	}
	by := make(map[string]analytics.SLIPoint, len(rows))
	for _, p := range rows {
		by[p.Day.UTC().Format(analytics.DateLayout)] = p
	}
	var out []analytics.SLIPoint
	for d := lo.Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
		p := by[d.Format(analytics.DateLayout)]
		p.Day, p.Bad = d, sliBadErrors(p.Bad, q.ErrorKinds)
		out = append(out, p)
	}
	return out, nil
}
