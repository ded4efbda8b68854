package postgres

import "context"

// TryLocked runs fn while holding the session-level advisory lock key, if no
// other session (on any instance) holds it; otherwise it returns false at
// once. Jobs that must run once across instances (the nightly pass, the
// evaluator) take it.
func (db *DB) TryLocked(ctx context.Context, key int64, fn func(context.Context) error) (ran bool, err error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return false, wrap(err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
		return false, wrap(err)
	}
	if !got {
		return false, nil
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key) }()
	return true, fn(ctx)
}
