package clickhouse

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// OptimizeFinal forces the merges of a table: of the local table on every
// host of a cluster. Tests only.
func (db *DB) OptimizeFinal(ctx context.Context, table string) error {
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
			if err := conn.QueryRow(ctx, "SELECT arraySort(groupUniqArray(mcp_id)) FROM "+db.local(t.table)).Scan(&ids); err != nil {
				return err
			}
			*t.out = append(*t.out, ids)
		}
		return nil
	})
	return events, rollups, err
}
