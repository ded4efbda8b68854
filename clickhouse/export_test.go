package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// SetExportChunkRows sets the items an export query reads at most (a day
// at least). Tests only.
func (db *DB) SetExportChunkRows(n uint64) { db.knobs.exportChunk = n }

// SetExportCompression turns the compression of export reads on or off,
// whatever the address. Tests only.
func (db *DB) SetExportCompression(on bool) {
	db.knobs.exportCompress = -1
	if on {
		db.knobs.exportCompress = 1
	}
}

// SetDeletionPolled sets a function given what each poll of a deletion
// found left. Tests only.
func (db *DB) SetDeletionPolled(f func(left uint64)) { db.knobs.deletionPolled = f }

// SetRawBreakdownRows sets the row budget of raw breakdowns. Tests only.
func (db *DB) SetRawBreakdownRows(n int) { db.knobs.rawRows = n }

// OptimizeFinal forces the merges of a table: of the local table on every
// host of a cluster. Tests only.
func (db *DB) OptimizeFinal(ctx context.Context, table string) error {
	if db.cfg.Replicated {
		// A replicated merge is one log entry the replicas all follow:
		// asked of two replicas at once, 18.16 fails. Waiting for the
		// replicas to run it fails at times on 18.16 too ("Unknown log
		// entry type: 0", thrown while logging the entry it waits for):
		// the merge is queued all the same, and reads must be right
		// before and after merges anyway.
		shards, err := db.shardReplicas(ctx)
		if err != nil {
			return err
		}
		err = onOneReplicaPerShard(ctx, db.cfg, shards, "OPTIMIZE TABLE "+db.local(table)+" FINAL")
		if err != nil && strings.Contains(err.Error(), "Unknown log entry type") {
			return nil
		}
		return err
	}
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		return conn.Exec(ctx, "OPTIMIZE TABLE "+db.local(table)+" FINAL")
	})
}

// LocalMCPs lists, for each host of a cluster, the MCPs whose rows its
// events_local and mcp_daily_local hold. Tests only.
func (db *DB) LocalMCPs(ctx context.Context) (events, rollups [][]string, err error) {
	err = db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		for _, t := range []struct {
			table string
			out   *[][]string
		}{{"events", &events}, {"mcp_daily", &rollups}} {
			var ids []string
			if err := conn.QueryRow(ctx, "SELECT arraySort(groupUniqArray(mcp_id)) FROM "+db.local(t.table)+" WHERE mcp_id NOT LIKE '~wal/%'").Scan(&ids); err != nil {
				return err
			}
			*t.out = append(*t.out, ids)
		}
		return nil
	})
	return events, rollups, err
}

// DetachView detaches the views into rollup (mcp_daily, ...) on every
// host, so that inserts reach events and the other rollups only: an insert
// cut short between its views. A rollup fed through rollup_input
// (migration 008) has two views, one for each kind of server version:
// both are detached. AttachView puts them back. Tests only.
func (db *DB) DetachView(ctx context.Context, rollup string) error {
	for _, v := range rollupViewNames(rollup) {
		if err := db.ExecOnEveryHost(ctx, "DETACH TABLE "+db.db+"."+v); err != nil {
			return err
		}
	}
	return nil
}

// AttachView undoes DetachView.
func (db *DB) AttachView(ctx context.Context, rollup string) error {
	for _, v := range rollupViewNames(rollup) {
		if err := db.ExecOnEveryHost(ctx, "ATTACH TABLE "+db.db+"."+v); err != nil {
			return err
		}
	}
	return nil
}

// chainedRollups are the rollups that migration 008 feeds from
// rollup_input, through a name_mv and a name_chained_mv.
var chainedRollups = []string{"protocol_daily", "breakdown_daily"}

// rollupViewNames names the views into rollup.
func rollupViewNames(rollup string) []string {
	if slices.Contains(chainedRollups, rollup) {
		return []string{rollup + "_mv", rollup + "_chained_mv"}
	}
	return []string{rollup + "_mv"}
}

// dropRollups drops the rollups named, their views and, with input, the
// input aggregate of migration 008 with its view, on the host of conn.
func (db *DB) dropRollups(ctx context.Context, conn driver.Conn, input bool, rollups ...string) error {
	var drop []string
	if input {
		drop = append(drop, db.db+".rollup_input_mv", db.local("rollup_input"))
	}
	for _, name := range rollups {
		for _, v := range rollupViewNames(name) {
			drop = append(drop, db.db+"."+v)
		}
		drop = append(drop, db.db+"."+name, db.local(name))
	}
	for _, t := range drop {
		if err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return err
		}
	}
	return nil
}

// ForgetMonthly drops the monthly rollups and their views, as before
// migration 004; with ForgetMigrations, the next Migrate runs every file
// again (the older ones are idempotent) and backfills them. Tests only.
func (db *DB) ForgetMonthly(ctx context.Context) error {
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		return db.dropRollups(ctx, conn, false, "tool_monthly", "error_monthly", "client_monthly")
	})
}

// ForgetAnalyst drops the tables and views of migration 005, as before
// it; with ForgetMigrations, the next Migrate backfills them. Tests only.
func (db *DB) ForgetAnalyst(ctx context.Context) error {
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		return db.dropRollups(ctx, conn, false, "session_span", "breakdown_daily", "mcp_hourly", "tool_hourly")
	})
}

// ForgetMigrations drops the record of applied migrations, so that the
// next Migrate runs every file again. Tests only.
func (db *DB) ForgetMigrations(ctx context.Context) error {
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		return conn.Exec(ctx, "DROP TABLE IF EXISTS "+db.db+".schema_migrations")
	})
}

// ShardReplicas lists the hosts of the cluster by shard. Tests only.
func (db *DB) ShardReplicas(ctx context.Context) ([][]string, error) { return db.shardReplicas(ctx) }

// ForgetProtocolVersion takes an installation back to before migration
// 006: no protocol_version column in events, no protocol_daily. Tests
// only.
func (db *DB) ForgetProtocolVersion(ctx context.Context) error {
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		// rollup_input reads protocol_version (migration 008, which
		// runs again after 006).
		if err := db.dropRollups(ctx, conn, true, "protocol_daily"); err != nil {
			return err
		}
		tables := []string{db.local("events")}
		if db.cluster != "" {
			tables = append(tables, db.db+".events")
		}
		for _, t := range tables {
			// A replica's drop reaches its twin through ZooKeeper: drop
			// only where the column is still there.
			var n uint64
			name := strings.TrimPrefix(t, db.db+".")
			if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = 'protocol_version'",
				db.db, name).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			if err := conn.Exec(ctx, "ALTER TABLE "+t+" DROP COLUMN protocol_version"); err != nil {
				return err
			}
		}
		return nil
	})
}

// TablesWith lists the tables of the store's database (the Distributed
// ones on a cluster; no Null table, which holds no rows) that have a
// column named column, as the server describes them (not as the
// migrations do). Tests only.
func (db *DB) TablesWith(ctx context.Context, column string) ([]string, error) {
	var names []string
	err := db.query(ctx, "tables with "+column, `SELECT DISTINCT table FROM system.columns
		WHERE database = ? AND name = ? AND table NOT LIKE '%\_local'
			AND table IN (SELECT name FROM system.tables WHERE database = ? AND engine NOT LIKE '%View' AND engine != 'Null')
		ORDER BY table`,
		[]any{db.db, column, db.db}, func() []any { return []any{appendRow(&names)} })
	return names, err
}

// CountWhere counts the rows of a table (db.table) matching cond, whose
// answer may depend on how far mutations have got. Tests only.
func (db *DB) CountWhere(ctx context.Context, table, cond string, args ...any) (uint64, error) {
	var n uint64
	err := db.conn.QueryRow(ctx, "SELECT count() FROM "+db.db+"."+table+" WHERE "+cond+" "+duringMutations, args...).Scan(&n)
	return n, err
}

// LifecycleTables lists the tables deleting an MCP empties of its rows,
// and those a person's deletion reaches (as derived from the migrations).
// Tests only.
func LifecycleTables() (withMCP, perPerson []string, err error) {
	if withMCP, err = tableNames(lifecycleTable.deletedWithMCP); err != nil {
		return nil, nil, err
	}
	perPerson, err = tableNames(func(t lifecycleTable) bool { return t.person != "" })
	return withMCP, perPerson, err
}

// MigrateTo runs the migrations up to version only, as an installation
// of that version would have. Tests only.
func (db *DB) MigrateTo(ctx context.Context, version uint32) error {
	migs, err := loadMigrations(db.templateData())
	if err != nil {
		return err
	}
	migs = slices.DeleteFunc(migs, func(m migration) bool { return m.version > version })
	if db.cfg.Replicated {
		return db.migrateReplicated(ctx, migs)
	}
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db.db); err != nil {
			return err
		}
		return migrateHost(ctx, conn, db.db, migs)
	})
}

// AddFailureColumns adds only the events columns of migrations 009
// (error_kind, response_bytes, args_hash) and 013 (id_uuid) to an
// installation migrated to an older version, so that the Sink's inserts,
// which name them, work there. Tests only.
func (db *DB) AddFailureColumns(ctx context.Context) error {
	migs, err := loadMigrations(db.templateData())
	if err != nil {
		return err
	}
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		for _, m := range migs {
			if m.version != 9 && m.version != 13 {
				continue
			}
			for _, stmt := range m.statements {
				if strings.HasPrefix(stmt, "ALTER TABLE") {
					if err := execMigration(ctx, conn, stmt); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// RollupTotals reads a rollup (through its Distributed table on a
// cluster) merged by its key: each row's key columns and finalized values
// as one string, its t-digest percentiles (dur_q, if any) apart, in key
// order. Summed plain counts (calls, events) are values, the other plain
// columns the key. Tests only.
func (db *DB) RollupTotals(ctx context.Context, rollup string) (rows []string, quantiles [][]float64, err error) {
	type column struct{ name, typ string }
	var cols []column
	if err := db.query(ctx, "columns of "+rollup, "SELECT name, type FROM system.columns WHERE database = ? AND table = ?",
		[]any{db.db, rollup}, func() []any { c := appendRow(&cols); return []any{&c.name, &c.typ} }); err != nil {
		return nil, nil, err
	}
	var keys, values []string
	quantile := "emptyArrayFloat64()"
	for _, c := range cols {
		f, isAgg := strings.CutPrefix(c.typ, "AggregateFunction(")
		switch {
		case c.name == "dur_q":
			quantile = "quantilesTDigestIfMerge(0.5, 0.95, 0.99)(dur_q)"
		case isAgg:
			fn := f[:strings.IndexAny(f, "(,)")]
			values = append(values, "toString("+fn+"Merge("+c.name+"))")
		case c.name == "calls" || c.name == "events":
			values = append(values, "toString(sum("+c.name+"))")
		default:
			keys = append(keys, c.name)
		}
	}
	if len(cols) == 0 {
		return nil, nil, fmt.Errorf("no rollup %s", rollup)
	}
	fields := make([]string, 0, len(keys)+len(values))
	for _, k := range keys {
		fields = append(fields, "toString("+k+")")
	}
	q := fmt.Sprintf("SELECT arrayStringConcat([%s], '|'), %s FROM %s.%s GROUP BY %s ORDER BY %s",
		strings.Join(append(fields, values...), ", "), quantile, db.db, rollup, strings.Join(keys, ", "), strings.Join(keys, ", "))
	err = db.query(ctx, "totals of "+rollup, q, nil, func() []any {
		rows, quantiles = append(rows, ""), append(quantiles, nil)
		return []any{&rows[len(rows)-1], &quantiles[len(quantiles)-1]}
	})
	return rows, quantiles, err
}

// BreakIdleInserts closes the sockets of the idle insert connections and
// leaves them in the pool, as a server that dropped them would. It
// returns how many there were. Tests only.
func (db *DB) BreakIdleInserts() int { return db.ins.conns.BreakIdle() }

// BreakIdleReads does the same to the idle connections of the reads
// decoded column by column (nativeQuery). Tests only.
func (db *DB) BreakIdleReads() int { return db.reads.BreakIdle() }
