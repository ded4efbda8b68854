package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/analytics"
)

var _ analytics.RetentionStore = (*DB)(nil)

// Retention works on the partitions the migrations declare: events by UTC
// day (toDate(ts)), the daily rollups, usage and nightly figures by month
// of day (toYYYYMM(day)), the monthly rollups by month (toYYYYMM(month)).
// 18.16 has no TTL, so old days go by ALTER TABLE ... DROP PARTITION, and
// rows inside partitions that must stay by ALTER TABLE ... DELETE
// (mutations), both on every host's local tables.
var (
	dayTables = []string{"mcp_daily", "tool_daily", "session_daily", "error_daily", "client_daily",
		"tool_client_daily", "user_daily", "usage_daily", "nightly", "protocol_daily"}
	monthTables = []string{"tool_monthly", "error_monthly", "client_monthly"}
)

// monthStart is the first day of t's month.
func monthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// PlanRetention implements analytics.RetentionStore.
func (db *DB) PlanRetention(ctx context.Context, installation int, accounts []analytics.AccountRetention, today time.Time) ([]analytics.RetentionStep, error) {
	dropBefore, per := analytics.RetentionCutoffs(installation, accounts, today)
	var steps []analytics.RetentionStep
	if !dropBefore.IsZero() {
		step := analytics.RetentionStep{Kind: "drop", Before: dropBefore}
		parts := map[string]bool{}
		err := db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
			rows, err := conn.Query(ctx, `SELECT DISTINCT table, partition_id FROM system.parts
				WHERE database = ? AND active`, db.db)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var table, id string
				if err := rows.Scan(&table, &id); err != nil {
					return err
				}
				table = strings.TrimSuffix(table, "_local")
				if p, ok := droppable(table, id, dropBefore); ok {
					parts[table+":"+p] = true
				}
			}
			return rows.Err()
		})
		if err != nil {
			return nil, wrapErr("retention plan", err)
		}
		for p := range parts {
			step.Partitions = append(step.Partitions, p)
		}
		sort.Strings(step.Partitions)
		if len(step.Partitions) > 0 {
			// The items counted once per shard (system.parts lists every
			// replica's copy), less the insert ledger's marker rows (one per
			// insert and day: they go with their partitions but are not
			// items; they lead the sorting key, so counting them is cheap).
			var all, markers uint64
			q := fmt.Sprintf("SELECT count() FROM %s.events WHERE ts < %s", db.db, timeLit(dropBefore))
			if err := db.conn.QueryRow(ctx, q).Scan(&all); err != nil {
				return nil, wrapErr("retention plan", err)
			}
			if err := db.conn.QueryRow(ctx, q+" AND mcp_id LIKE '"+MarkerPrefix+"%'").Scan(&markers); err != nil {
				return nil, wrapErr("retention plan", err)
			}
			step.Rows = all - min(markers, all)
			steps = append(steps, step)
		}
	}
	ids := make([]string, 0, len(per))
	for id := range per {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	byID := map[string]analytics.AccountRetention{}
	for _, a := range accounts {
		byID[a.AccountID] = a
	}
	for _, id := range ids {
		a, before := byID[id], per[id]
		var raw, rolled uint64
		in := quoteList(a.MCPIDs)
		if err := db.conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM %s.events WHERE mcp_id IN (%s) AND ts < %s AND ts >= %s",
			db.db, in, timeLit(before), timeLit(dropBefore))).Scan(&raw); err != nil {
			return nil, wrapErr("retention plan", err)
		}
		if err := db.conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM %s.mcp_daily WHERE mcp_id IN (%s) AND day < %s AND day >= %s",
			db.db, in, dateLit(before), dateLit(dropBefore))).Scan(&rolled); err != nil {
			return nil, wrapErr("retention plan", err)
		}
		if raw+rolled > 0 {
			steps = append(steps, analytics.RetentionStep{Kind: "delete", Before: before, AccountID: id, MCPIDs: a.MCPIDs, Rows: raw})
		}
	}
	return steps, nil
}

// droppable returns the partition expression of a partition wholly before
// the cut-off, for the tables retention manages.
func droppable(table, id string, before time.Time) (string, bool) {
	switch {
	case table == "events":
		d, err := time.Parse("20060102", id)
		if err == nil && d.Before(before) {
			return "'" + d.Format(analytics.DateLayout) + "'", true
		}
	case contains(dayTables, table) || contains(monthTables, table):
		m, err := time.Parse("200601", id)
		// A month partition goes when the whole month is before the cut-off.
		if err == nil && !m.AddDate(0, 1, 0).After(before) {
			return id, true
		}
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ApplyRetention implements analytics.RetentionStore. A drop also deletes
// the rows before the cut-off in the month partitions it straddles (days
// of the daily rollups), when there are any; a delete runs mutations on
// every table for the account's MCPs.
func (db *DB) ApplyRetention(ctx context.Context, step analytics.RetentionStep) error {
	var stmts []string
	switch step.Kind {
	case "drop":
		for _, p := range step.Partitions {
			table, part, _ := strings.Cut(p, ":")
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DROP PARTITION %s", db.local(table), part))
		}
		for _, t := range dayTables {
			var n uint64
			if err := db.conn.QueryRow(ctx, fmt.Sprintf("SELECT count() FROM %s.%s WHERE day < %s", db.db, t, dateLit(step.Before))).Scan(&n); err != nil {
				return wrapErr("retention", err)
			}
			if n > 0 {
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE day < %s", db.local(t), dateLit(step.Before)))
			}
		}
	case "delete":
		in := quoteList(step.MCPIDs)
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE mcp_id IN (%s) AND ts < %s", db.local("events"), in, timeLit(step.Before)))
		for _, t := range dayTables {
			cond := fmt.Sprintf("mcp_id IN (%s)", in)
			if t == "usage_daily" {
				cond = "account_id = " + QuoteString(step.AccountID)
			}
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s AND day < %s", db.local(t), cond, dateLit(step.Before)))
		}
		for _, t := range monthTables {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE mcp_id IN (%s) AND month < %s", db.local(t), in, dateLit(monthStart(step.Before))))
		}
	default:
		return fmt.Errorf("retention: unknown step %q", step.Kind)
	}
	if step.Kind == "delete" {
		return db.deleteUntilGone(ctx, time.Now(), func() ([]string, error) { return stmts, nil },
			fmt.Sprintf("mcp_id IN (%s) AND ts < %s", quoteList(step.MCPIDs), timeLit(step.Before)))
	}
	return db.mutate(ctx, stmts)
}
