package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// IngestIDs is the shared duplicate filter of ingest (ingest.IDRegistry):
// the ids every instance accepted in the window, in PostgreSQL, so that
// exactly-once holds across instances and no instance keeps them all in
// memory. A reservation is pending until the instance that made it has
// the payload in its log and confirms it; an unconfirmed one expires after
// the pending time (docs/exactly-once.md, "Shared dedup").
type IngestIDs struct {
	db      *DB
	window  time.Duration
	pending time.Duration
}

// DefaultPendingTTL is how long a reservation waits for its confirmation
// before another instance may take it over.
const DefaultPendingTTL = 10 * time.Second

// NewIngestIDs returns the registry for a duplicate window (24 h by
// contract) whose reservations stay pending for at most pending (0:
// DefaultPendingTTL).
func NewIngestIDs(db *DB, window, pending time.Duration) *IngestIDs {
	if pending <= 0 {
		pending = DefaultPendingTTL
	}
	return &IngestIDs{db: db, window: window, pending: pending}
}

// Reserve reserves ids of an MCP as pending at at, in one statement, and
// returns the ones it reserved (fresh) and, among the others, the ones
// another instance holds pending right now (busy: that payload may or may
// not be accepted yet). The rest were accepted within the window before.
// An id is fresh when no instance has it, when its reservation is older
// than the window, or when it is a pending one past its time (its holder
// died before its log had the payload). Two instances reserving the same
// id at once serialize on its primary key: one of them gets it. ids must
// not repeat.
func (r *IngestIDs) Reserve(ctx context.Context, mcpID string, ids []string, at time.Time) (fresh, busy []string, err error) {
	rows, err := r.db.Pool.Query(ctx, `
		INSERT INTO ingest_ids (mcp_id, id, received_at, pending_until)
		SELECT $1, u, $3, clock_timestamp() + $5::bigint * interval '1 millisecond' FROM unnest($2::text[]) AS u ORDER BY u -- one lock order: no deadlock between payloads
		ON CONFLICT (mcp_id, id) DO UPDATE SET received_at = EXCLUDED.received_at, pending_until = EXCLUDED.pending_until
			WHERE ingest_ids.received_at <= $4 OR ingest_ids.pending_until < clock_timestamp()
		RETURNING id`, mcpID, ids, at, at.Add(-r.window), r.pending.Milliseconds())
	if err != nil {
		return nil, nil, wrap(err)
	}
	fresh, err = collectIDs(rows, len(ids))
	if err != nil || len(fresh) == len(ids) {
		return fresh, nil, err
	}
	// Rare (a retry): which of the others are pending rather than
	// accepted. A statement of its own, so that it sees the reservations
	// committed while the first one waited on their rows.
	rows, err = r.db.Pool.Query(ctx, `
		SELECT id FROM ingest_ids WHERE mcp_id = $1 AND id = ANY($2) AND received_at <> $3
			AND pending_until >= clock_timestamp()`, mcpID, ids, at)
	if err != nil {
		return nil, nil, wrap(err)
	}
	busy, err = collectIDs(rows, 0)
	return fresh, busy, err
}

// Confirm turns the reservations of ids made at at into acceptances and
// returns the ids that are this reservation's: confirmed, or reserved now
// when no instance holds them (a reservation expired by the window). An id
// missing from the answer was taken over by another instance after its
// pending time passed: that instance accepted it, and this one must not
// store it. One statement.
func (r *IngestIDs) Confirm(ctx context.Context, mcpID string, ids []string, at time.Time) ([]string, error) {
	rows, err := r.db.Pool.Query(ctx, `
		INSERT INTO ingest_ids (mcp_id, id, received_at, pending_until)
		SELECT $1, u, $3, NULL FROM unnest($2::text[]) AS u ORDER BY u
		ON CONFLICT (mcp_id, id) DO UPDATE SET pending_until = NULL
			WHERE ingest_ids.received_at = EXCLUDED.received_at
		RETURNING id`, mcpID, ids, at)
	if err != nil {
		return nil, wrap(err)
	}
	return collectIDs(rows, len(ids))
}

func collectIDs(rows pgx.Rows, n int) ([]string, error) {
	defer rows.Close()
	out := make([]string, 0, n)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap(err)
		}
		out = append(out, id)
	}
	return out, wrap(rows.Err())
}

// Release forgets reservations made at at whose payload was not accepted
// after all (the log could not write it), so that the client's retry is.
func (r *IngestIDs) Release(ctx context.Context, mcpID string, ids []string, at time.Time) error {
	_, err := r.db.Pool.Exec(ctx, `DELETE FROM ingest_ids WHERE mcp_id = $1 AND id = ANY($2) AND received_at = $3`,
		mcpID, ids, at)
	return wrap(err)
}

// Expire deletes up to limit ids older than the window and returns how many
// it deleted; call it until it returns less than limit.
func (r *IngestIDs) Expire(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := r.db.Pool.Exec(ctx, `
		DELETE FROM ingest_ids WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM ingest_ids WHERE received_at <= $1 LIMIT $2))`, now.Add(-r.window), limit)
	if err != nil {
		return 0, wrap(err)
	}
	return int(tag.RowsAffected()), nil
}
