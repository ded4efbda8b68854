package clickhouse

import "context"

// Exec runs a statement; tests only (forcing merges, say).
func (db *DB) Exec(ctx context.Context, query string) error {
	return db.conn.Exec(ctx, query)
}
