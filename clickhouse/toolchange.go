package clickhouse

import (
	"context"
	"fmt"
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
