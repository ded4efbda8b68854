package clickhouse

import "context"

// DropDatabase drops the store's database; tests only.
func (db *DB) DropDatabase(ctx context.Context) error {
	return db.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db.db)
}

// Exec runs a statement; tests only (forcing merges, say).
func (db *DB) Exec(ctx context.Context, query string) error {
	return db.conn.Exec(ctx, query)
}
