package clickhouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// A tool change's impact (docs/tool-changes.md), from the events of the
// one tool: the clients that called it in the 7 days before the change,
// and its calls, errors and error kinds over matched windows around it.
// One MCP's events of at most 14 days, read by the primary key (mcp_id,
// ts).

var _ analytics.ToolChangeImpactReader = (*Reads)(nil)

// ToolChangeImpact implements analytics.ToolChangeImpactReader.
func (db *Reads) ToolChangeImpact(ctx context.Context, mcpID, tool string, at, now time.Time) (analytics.ToolChangeImpact, error) {
	before, after := analytics.ImpactWindows(at, now)
	imp := analytics.ToolChangeImpact{AffectedClients: []analytics.AffectedClient{}, Before: before, After: after}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT CAST(client_name AS String) AS c, toInt64(count()) AS n FROM %s.events
			WHERE mcp_id = ? AND %s AND method = 'tools/call' AND name = ?
			GROUP BY c ORDER BY n DESC, c LIMIT %d`, db.db, msRange(at.Add(-analytics.AffectedClientsWindow), at), analytics.MaxAffectedClients)
		return db.query(gctx, "change clients", q, []any{mcpID, tool}, func() []any {
			c := appendRow(&imp.AffectedClients)
			return []any{&c.ClientName, &c.CallsBefore}
		})
	})
	type row struct {
		after         uint8
		kind          string
		calls, errors int64
	}
	var rows []row
	if after.To.After(at) {
		g.Go(func() error {
			q := fmt.Sprintf(`SELECT toUInt8(ts > %[3]s OR (ts = %[3]s AND ts_ms >= %[4]d)) AS after, CAST(error_kind AS String) AS kind,
				toInt64(count()), toInt64(sum(is_error)) FROM %[1]s.events
				WHERE mcp_id = ? AND %[2]s AND method = 'tools/call' AND name = ?
				GROUP BY after, kind`, db.db, msRange(before.From, after.To), timeLit(at.UTC()), at.UTC().Nanosecond()/1e6)
			return db.query(gctx, "change windows", q, []any{mcpID, tool}, func() []any {
				r := appendRow(&rows)
				return []any{&r.after, &r.kind, &r.calls, &r.errors}
			})
		})
	}
	if err := g.Wait(); err != nil {
		return analytics.ToolChangeImpact{}, err
	}
	for _, r := range rows {
		w := &imp.Before
		if r.after == 1 {
			w = &imp.After
		}
		w.Calls += r.calls
		w.Errors += r.errors
		if r.kind != "" && r.errors > 0 {
			w.ErrorKinds[r.kind] += r.errors
		}
	}
	imp.Before.SetRate()
	imp.After.SetRate()
	return imp, nil
}

var _ analytics.AffectedClientsReader = (*Reads)(nil)

// AffectedClients implements analytics.AffectedClientsReader by reads of
// the MCP's tools/call events of the changed tools, each from the window
// before its tools' earliest change to their latest: a call counts for
// every change of its tool in the AffectedClientsWindow after it (the
// same [at-window, at) as ToolChangeImpact, to the millisecond). The
// tools are split over as few reads as keep each statement under
// max_query_size (names of up to 256 characters, up to 1,000 changes);
// within the raw budget of the reads of repeats and unknown tools.
func (db *Reads) AffectedClients(ctx context.Context, mcpID string, changes []analytics.InventoryChange) ([][]analytics.AffectedClient, error) {
	out := make([][]analytics.AffectedClient, len(changes))
	// The change times of each tool, and which changes each names.
	byTool := map[string]map[int64][]int{}
	var tools []string
	for i, c := range changes {
		at := c.At.UTC().UnixMilli()
		if byTool[c.Tool] == nil {
			byTool[c.Tool] = map[int64][]int{}
			tools = append(tools, c.Tool)
		}
		byTool[c.Tool][at] = append(byTool[c.Tool][at], i)
		out[i] = []analytics.AffectedClient{}
	}
	var g affectedGroup
	for _, tool := range tools {
		name, ats := QuoteString(tool), make([]string, 0, len(byTool[tool]))
		for at := range byTool[tool] {
			ats = append(ats, strconv.FormatInt(at, 10))
		}
		times := "[" + strings.Join(ats, ",") + "]"
		if len(g.names) > 0 && g.bytes+len(name)+len(times)+2 > maxStatementBytes-4096 {
			if err := db.affectedClients(ctx, mcpID, g, byTool, out); err != nil {
				return nil, err
			}
			g = affectedGroup{}
		}
		for at := range byTool[tool] {
			g.span(at)
		}
		g.names, g.times = append(g.names, name), append(g.times, times)
		g.bytes += len(name) + len(times) + 2
	}
	if len(g.names) > 0 {
		if err := db.affectedClients(ctx, mcpID, g, byTool, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// affectedGroup is the tools of one read of AffectedClients: their quoted
// names and change-time arrays (in the same order), the literals' size,
// and the earliest and latest change (Unix ms).
type affectedGroup struct {
	names, times []string
	bytes        int
	first, last  int64
}

func (g *affectedGroup) span(at int64) {
	if g.first == 0 || at < g.first {
		g.first = at
	}
	if at > g.last {
		g.last = at
	}
}

// affectedClients reads one group's clients into out (by change index).
func (db *Reads) affectedClients(ctx context.Context, mcpID string, g affectedGroup, byTool map[string]map[int64][]int, out [][]analytics.AffectedClient) error {
	window := analytics.AffectedClientsWindow.Milliseconds()
	// 18.16 loses a lambda's captured column under GROUP BY, so the call's
	// time goes into arrayFilter as an array of its own. The names are
	// written once: the calls of other tools have no index (0).
	q := fmt.Sprintf(`SELECT tool, c,
			toInt64(arrayJoin(arrayFilter((a, x) -> a > x AND a <= x + %[1]d, ats, arrayResize(emptyArrayInt64(), length(ats), tms)))) AS at,
			toInt64(count()) AS n
		FROM (SELECT CAST(name AS String) AS tool, CAST(client_name AS String) AS c, toInt64(toUInt32(ts)) * 1000 + ts_ms AS tms,
				indexOf([%[3]s], tool) AS ti, [%[2]s][ti] AS ats
			FROM %[4]s.events
			WHERE mcp_id = ? AND method = 'tools/call' AND %[5]s AND ti > 0)
		GROUP BY tool, c, at ORDER BY n DESC, c`, window, strings.Join(g.times, ","), strings.Join(g.names, ","), db.db,
		msRange(time.UnixMilli(g.first).Add(-analytics.AffectedClientsWindow), time.UnixMilli(g.last)))
	type row struct {
		tool, client string
		at, n        int64
	}
	var rows []row
	if err := db.query(db.rawBudget(ctx), "affected clients", q, []any{mcpID}, func() []any {
		r := appendRow(&rows)
		return []any{&r.tool, &r.client, &r.at, &r.n}
	}); err != nil {
		return err
	}
	for _, r := range rows {
		for _, i := range byTool[r.tool][r.at] {
			if len(out[i]) < analytics.MaxAffectedClients {
				out[i] = append(out[i], analytics.AffectedClient{ClientName: r.client, CallsBefore: r.n})
			}
		}
	}
	return nil
}
