package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
)

// The failure figures of rule windows (docs/failures.md): errors by kind
// (rule filter error_kind, metric unknown_tool_calls) and repeated calls
// (metric repeated_calls).

func (f *countsFold) addKind(mcpID, key, kind string, first int, e uint64) {
	ws := f.windows[mcpID]
	byKey := f.kinds[mcpID]
	if byKey == nil {
		byKey = map[string]map[string][]uint64{}
		f.kinds[mcpID] = byKey
	}
	byKind := byKey[key]
	if byKind == nil {
		byKind = map[string][]uint64{}
		byKey[key] = byKind
	}
	k := byKind[kind]
	if k == nil {
		k = make([]uint64, len(ws))
		byKind[kind] = k
	}
	for i := first; i < len(ws); i++ {
		k[i] += e
	}
}

// addWindowKinds adds to WindowStats' answer the errors by kind of
// [from, to), under the MCP ("") and each tool's tools/call items.
func (db *Reads) addWindowKinds(ctx context.Context, from, to time.Time, ids []any, out map[string]map[string]analytics.WindowStat) error {
	q := fmt.Sprintf(`SELECT mcp_id, key, CAST(error_kind AS String) AS kind, toInt64(count())
		FROM %s.events
		ARRAY JOIN if(method = 'tools/call', ['', name], ['']) AS key
		WHERE mcp_id IN ? AND %s AND is_error = 1 AND error_kind != ''
		GROUP BY mcp_id, key, kind`, db.db, msRange(from, to))
	type row struct {
		mcpID, key, kind string
		n                int64
	}
	var rows []row
	if err := db.query(ctx, "window kinds", q, []any{clickhouse.GroupSet{Value: ids}}, func() []any {
		r := appendRow(&rows)
		return []any{&r.mcpID, &r.key, &r.kind, &r.n}
	}); err != nil {
		return err
	}
	for _, r := range rows {
		if out[r.mcpID] == nil {
			out[r.mcpID] = map[string]analytics.WindowStat{}
		}
		st := out[r.mcpID][r.key]
		if st.ErrorKinds == nil {
			st.ErrorKinds = map[string]int64{}
		}
		st.ErrorKinds[r.kind] = r.n
		out[r.mcpID][r.key] = st
	}
	return nil
}

var _ analytics.RepeatCounter = (*Reads)(nil)

// RepeatCounts implements analytics.RepeatCounter: one read per MCP and
// window length (only rules on repeated_calls ask), each over the
// window's tools/call items, sessions in timeline order.
func (db *Reads) RepeatCounts(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]int64, error) {
	out := map[string]map[int]map[string]int64{}
	for mcpID, req := range reqs {
		for _, minutes := range req.Minutes {
			from := to.Add(-time.Duration(minutes) * time.Minute)
			byTool, err := db.repeatedCalls(ctx, "mcp_id = ? AND "+msRange(from, to), []any{mcpID})
			if err != nil {
				return nil, err
			}
			counts := map[string]int64{}
			for name, n := range byTool {
				counts[name] = n
				counts[""] += n
			}
			if out[mcpID] == nil {
				out[mcpID] = map[int]map[string]int64{}
			}
			out[mcpID][minutes] = counts
		}
	}
	return out, nil
}
