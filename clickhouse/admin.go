package clickhouse

import "context"

// DropDatabase drops the store's whole database. Only tests and the
// benchmark's scratch databases call it.
func (db *DB) DropDatabase(ctx context.Context) error {
	return db.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db.db)
}
