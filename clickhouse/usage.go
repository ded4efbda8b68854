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
func (db *Reads) Usage(ctx context.Context, accountID string, r analytics.Range, mcps []analytics.MCPName) (*analytics.Usage, error) {
	q := fmt.Sprintf(`SELECT day, mcp_id, toInt64(sum(events)) FROM %s.usage_daily
		WHERE account_id = ? AND %s GROUP BY day, mcp_id`, db.db, dayFilter(r))
	type dayMCP struct {
		day    time.Time
		mcpID  string
		events int64
	}
	var rows []dayMCP
	err := db.query(ctx, "usage", q, []any{accountID}, func() []any {
		d := appendRow(&rows)
		return []any{&d.day, &d.mcpID, &d.events}
	})
	if err != nil {
		return nil, err
	}
	byDay := map[string]int64{}
	byMCP := map[string]int64{}
	var total int64
	for _, d := range rows {
		byDay[d.day.Format(analytics.DateLayout)] += d.events
		byMCP[d.mcpID] += d.events
		total += d.events
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
