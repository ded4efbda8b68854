package clickhouse

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// DropDatabase drops the store's whole database (on every host of a
// cluster). Only tests and the benchmark's scratch databases call it.
func (db *DB) DropDatabase(ctx context.Context) error {
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		return conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db.db)
	})
}
