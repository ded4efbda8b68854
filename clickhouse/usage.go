package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// Usage implements analytics.Reader from usage_daily (events by the UTC
// day they were accepted).
func (db *DB) Usage(ctx context.Context, accountID string, r analytics.Range, mcps []analytics.MCPName) (*analytics.Usage, error) {
	q := fmt.Sprintf(`SELECT day, mcp_id, sum(events) FROM %s.usage_daily
		WHERE account_id = ? AND %s GROUP BY day, mcp_id`, db.db, dayFilter(r))
	rows, err := db.conn.Query(ctx, q, accountID)
	if err != nil {
		return nil, wrapErr("usage", err)
	}
	defer rows.Close()
	byDay := map[string]int64{}
	byMCP := map[string]int64{}
	var total int64
	for rows.Next() {
		var (
			day    time.Time
			mcpID  string
			events uint64
		)
		if err := rows.Scan(&day, &mcpID, &events); err != nil {
			return nil, wrapErr("usage", err)
		}
		byDay[day.Format(analytics.DateLayout)] += int64(events)
		byMCP[mcpID] += int64(events)
		total += int64(events)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("usage", err)
	}
	u := &analytics.Usage{From: r.FromDate(), To: r.ToDate(), Events: total,
		Days: make([]analytics.UsageDay, 0, r.NumDays()), MCPs: make([]analytics.UsageMCP, 0, len(mcps))}
	for _, date := range r.Days() {
		u.Days = append(u.Days, analytics.UsageDay{Date: date, Events: byDay[date]})
	}
	named := map[string]bool{}
	for _, m := range mcps {
		if named[m.ID] {
			continue
		}
		named[m.ID] = true
		name := m.Name
		u.MCPs = append(u.MCPs, analytics.UsageMCP{MCPID: m.ID, Name: &name, Events: byMCP[m.ID]})
	}
	for id, events := range byMCP {
		if !named[id] {
			u.MCPs = append(u.MCPs, analytics.UsageMCP{MCPID: id, Events: events})
		}
	}
	sort.Slice(u.MCPs, func(i, j int) bool {
		a, b := u.MCPs[i], u.MCPs[j]
		if a.Events != b.Events {
			return a.Events > b.Events
		}
		return a.MCPID < b.MCPID
	})
	return u, nil
}
