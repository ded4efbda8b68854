package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/analytics"
)

var _ analytics.RetentionStore = (*Lifecycle)(nil)

// Retention works on the tables the migrations create (lifecycle.go): the
// raw table by UTC day partitions (toDate(ts)), the rollups, usage and
// nightly figures by month partitions, the per-session spans (no
// partitions) by their last item time. 18.16 has no TTL, so old days go by
// ALTER TABLE ... DROP PARTITION, and rows inside partitions that must
// stay (or in a table without partitions) by ALTER TABLE ... DELETE
// (mutations), both on every host's local tables.

// monthStart is the first day of t's month.
func monthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// PlanRetention implements analytics.RetentionStore.
func (db *Lifecycle) PlanRetention(ctx context.Context, installation int, accounts []analytics.AccountRetention, today time.Time) ([]analytics.RetentionStep, error) {
	all, err := tables()
	if err != nil {
		return nil, err
	}
	byName := map[string]lifecycleTable{}
	for _, t := range all {
		byName[t.name] = t
	}
	dropBefore, per := analytics.RetentionCutoffs(installation, accounts, today)
	var steps []analytics.RetentionStep
	if !dropBefore.IsZero() {
		step, err := db.planDrop(ctx, all, byName, dropBefore)
		if err != nil {
			return nil, err
		}
		if step != nil {
			steps = append(steps, *step)
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
	markers, err := db.planMarkers(ctx, all, today)
	if err != nil {
		return nil, err
	}
	if markers != nil {
		steps = append(steps, *markers)
	}
	return steps, nil
}

// planDrop plans the drop of everything before dropBefore: the partitions
// wholly before it, and mutations for the rows before it in partitions
// that stay or tables without partitions; nil when there is nothing to
// drop.
func (db *Lifecycle) planDrop(ctx context.Context, all []lifecycleTable, byName map[string]lifecycleTable, dropBefore time.Time) (*analytics.RetentionStep, error) {
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
			if t, ok := byName[table]; ok {
				if p, ok := t.partitionBefore(id, dropBefore); ok {
					parts[table+":"+p] = true
				}
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
	// Rows before the cut-off left in partitions that stay, or in a
	// table without partitions, go by mutations.
	for _, t := range all {
		if t.timeKind == "" || t.timeKind == timeMonth {
			continue // no tenant's rows; monthly rows keep whole months
		}
		if t.dayParts {
			continue // day partitions go whole
		}
		var n uint64
		q := fmt.Sprintf("SELECT count() FROM %s.%s WHERE %s %s", db.db, t.name, t.before(dropBefore), duringMutations)
		if err := db.conn.QueryRow(ctx, q).Scan(&n); err != nil {
			return nil, wrapErr("retention plan", err)
		}
		if n > 0 {
			step.Tables = append(step.Tables, t.name)
		}
	}
	if len(step.Partitions)+len(step.Tables) > 0 {
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
		return &step, nil
	}
	return nil, nil
}

// ApplyRetention implements analytics.RetentionStore. A drop also deletes
// the rows before the cut-off in the month partitions it straddles (days
// of the daily rollups), when there are any; a delete runs mutations on
// every table for the account's MCPs.
func (db *Lifecycle) ApplyRetention(ctx context.Context, step analytics.RetentionStep) error {
	all, err := tables()
	if err != nil {
		return err
	}
	var stmts []string
	switch step.Kind {
	case "drop":
		for _, p := range step.Partitions {
			table, part, _ := strings.Cut(p, ":")
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DROP PARTITION %s", db.local(table), part))
		}
		for _, t := range all {
			if slices.Contains(step.Tables, t.name) {
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s", db.local(t.name), t.before(step.Before)))
			}
		}
	case "delete":
		in := quoteList(step.MCPIDs)
		for _, t := range all {
			if t.timeKind == "" {
				continue
			}
			cond := fmt.Sprintf("mcp_id IN (%s)", in)
			if t.byAccount {
				cond = "account_id = " + QuoteString(step.AccountID)
			}
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s AND %s", db.local(t.name), cond, t.before(step.Before)))
		}
		return db.deleteUntilGone(ctx, time.Now(), func() ([]string, error) { return stmts, nil },
			fmt.Sprintf("mcp_id IN (%s) AND ts < %s", in, timeLit(step.Before)))
	case "markers":
		for _, name := range step.Tables {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s", db.local(name), markersBefore(step.Before)))
		}
	default:
		return fmt.Errorf("retention: unknown step %q", step.Kind)
	}
	if err := db.mutate(ctx, stmts); err != nil {
		return err
	}
	// The mutations are waited for, so that the next pass (the one after
	// a dry run, say) does not find their rows and plan them again.
	for _, name := range step.Tables {
		if err := db.waitMutations(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// markerKeepDays is how many UTC days of insert markers (ledger.go) the
// tables without partitions keep. A marker lets a retried insert find the
// rollups it left out; inserts are retried within minutes, and the only
// such table, session_span, holds min and max states, which a completion
// repeated after its marker went leaves unchanged.
const markerKeepDays = 2

// markersBefore selects the insert markers of days before the cut-off
// (a marker's id starts with its UTC day, MarkerPrefix + YYYYMMDD).
func markersBefore(cutoff time.Time) string {
	return fmt.Sprintf("mcp_id >= %s AND mcp_id < %s", QuoteString(MarkerPrefix), QuoteString(MarkerPrefix+cutoff.UTC().Format("20060102")))
}

// planMarkers plans the removal of old insert markers from the tables
// without partitions (partitioned tables lose theirs with their
// partitions); nil when there are none.
func (db *Lifecycle) planMarkers(ctx context.Context, all []lifecycleTable, today time.Time) (*analytics.RetentionStep, error) {
	cutoff := analytics.UTCDay(today).AddDate(0, 0, -markerKeepDays)
	step := analytics.RetentionStep{Kind: "markers", Before: cutoff}
	for _, t := range all {
		if t.partition != "" || !t.perMCP() {
			continue
		}
		var n uint64
		q := fmt.Sprintf("SELECT count() FROM %s.%s WHERE %s %s", db.db, t.name, markersBefore(cutoff), duringMutations)
		if err := db.conn.QueryRow(ctx, q).Scan(&n); err != nil {
			return nil, wrapErr("retention plan", err)
		}
		if n > 0 {
			step.Tables = append(step.Tables, t.name)
			step.Rows += n
		}
	}
	if len(step.Tables) == 0 {
		return nil, nil
	}
	return &step, nil
}

// waitMutations waits until no mutation of table is unfinished on any
// host.
func (db *Lifecycle) waitMutations(ctx context.Context, table string) error {
	for {
		running, err := db.mutationsRunning(ctx, table)
		if err != nil || !running {
			return err
		}
		if err := sleepCtx(ctx, mutationPoll); err != nil {
			return wrapErr("retention", err)
		}
	}
}
