package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
)

// WindowStats implements analytics.WindowReader with one scan of events:
// rule windows are minutes to a day long, which the (mcp_id, ts) key and
// day partitions make a narrow read, while a rollup by day could not cut
// them. Each row counts for its MCP under "" and, for tools/call, again
// under its tool name (ARRAY JOIN), so one GROUP BY yields both. The window
// is [from, to) to the millisecond.
func (db *DB) WindowStats(ctx context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]analytics.WindowStat, error) {
	out := make(map[string]map[string]analytics.WindowStat, len(mcpIDs))
	if len(mcpIDs) == 0 || !from.Before(to) {
		return out, nil
	}
	ids := make([]any, len(mcpIDs))
	for i, id := range mcpIDs {
		ids[i] = id
	}
	q := fmt.Sprintf(`SELECT mcp_id, key, toInt64(count()), toInt64(sum(is_error)), sum(has_duration),
			quantileTDigestIf(0.95)(duration_ms, has_duration)
		FROM %s.events
		ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
		WHERE mcp_id IN ? AND %s
		GROUP BY mcp_id, key`, db.db, msRange(from, to))
	type stat struct {
		mcpID, key string
		st         analytics.WindowStat
		withDur    uint64
		p95        float32
	}
	var rows []stat
	err := db.query(ctx, "window stats", q, []any{clickhouse.GroupSet{Value: ids}}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.st.Calls, &r.st.Errors, &r.withDur, &r.p95}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.withDur > 0 {
			v := quantile(r.p95)
			r.st.P95Ms = &v
		}
		if out[r.mcpID] == nil {
			out[r.mcpID] = map[string]analytics.WindowStat{}
		}
		out[r.mcpID][r.key] = r.st
	}
	return out, nil
}

// msRange selects the events in [from, to) to the millisecond: a coarse
// range on ts, which the primary key and partitions use, refined on the
// boundary seconds with ts_ms.
func msRange(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	fromMs, toMs := from.Nanosecond()/1e6, to.Nanosecond()/1e6
	return fmt.Sprintf("ts >= %[1]s AND ts <= %[2]s AND (ts > %[1]s OR ts_ms >= %[3]d) AND (ts < %[2]s OR ts_ms < %[4]d)",
		timeLit(from), timeLit(to), fromMs, toMs)
}
