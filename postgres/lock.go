package postgres

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

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

// lockNodeClass is the first key of the two-key advisory locks that hold
// ingest node ids (a key space apart from the one-key locks above).
const lockNodeClass int32 = 0x74656c01

// HoldNodeID takes an advisory lock on an ingest node id for as long as the
// instance runs, on a connection of its own, and returns the function that
// releases it. Two instances with one node id would take each other's
// write-ahead-log records for their own when a replay or a retry asks
// ClickHouse which records are stored, and skip them: the second instance
// is refused (ECONFLICT) instead.
//
// The lock goes with the connection. A killed instance frees it at once;
// one whose host died keeps it until the server's TCP keepalive gives up,
// which this connection shortens to about 30 s. HoldNodeID therefore waits
// up to wait for a lock held elsewhere before refusing, so that a
// replacement started at once is not refused for its dead predecessor.
func (db *DB) HoldNodeID(ctx context.Context, node string, wait time.Duration) (release func(), err error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, wrap(err)
	}
	if _, err := conn.Exec(ctx, `SELECT set_config('tcp_keepalives_idle', '15', false),
		set_config('tcp_keepalives_interval', '5', false), set_config('tcp_keepalives_count', '3', false)`); err != nil {
		conn.Release()
		return nil, wrap(err)
	}
	deadline := time.Now().Add(wait)
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", lockNodeClass, node).Scan(&got); err != nil {
			conn.Release()
			return nil, wrap(err)
		}
		if got {
			break
		}
		if !time.Now().Before(deadline) {
			conn.Release()
			return nil, telemetry.Errorf(telemetry.ECONFLICT,
				"ingest node id %q is in use by another running instance: give each instance its own ingest.node_id", node)
		}
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, ctx.Err()
		case <-time.After(min(time.Second, time.Until(deadline))):
		}
	}
	return func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1, hashtext($2))", lockNodeClass, node)
		conn.Release()
	}, nil
}
