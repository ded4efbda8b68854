package clickhouse

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// SyncReplicas waits until every replica of every replicated table of the
// store, on every host, has fetched the parts its replication queue holds
// (SYSTEM SYNC REPLICA): afterwards every replica answers as its shard's
// others. It fails with EUNAVAILABLE while a host is down. Nothing to do
// without replication.
func (db *Migrator) SyncReplicas(ctx context.Context) error {
	if !db.cfg.Replicated {
		return nil
	}
	return wrapErr("sync replicas", db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		rows, err := conn.Query(ctx, "SELECT table FROM system.replicas WHERE database = ?", db.db)
		if err != nil {
			return err
		}
		var tables []string
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			tables = append(tables, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, t := range tables {
			if err := conn.Exec(ctx, "SYSTEM SYNC REPLICA "+db.db+"."+t); err != nil {
				return err
			}
		}
		return nil
	}))
}
