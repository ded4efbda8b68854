package postgres

import (
	"context"
	"time"
)

// IngestIDs is the shared duplicate filter of ingest (ingest.IDRegistry):
// the ids every instance accepted in the window, in PostgreSQL, so that
// exactly-once holds across instances and no instance keeps them all in
// memory.
type IngestIDs struct {
	db     *DB
	window time.Duration
}

// NewIngestIDs returns the registry for a duplicate window (24 h by contract).
func NewIngestIDs(db *DB, window time.Duration) *IngestIDs {
	return &IngestIDs{db: db, window: window}
}

// Reserve records ids of an MCP as accepted at at and returns the ones that
// were not accepted within the window before (by any instance). Two
// instances reserving the same id at once serialize on its primary key: one
// of them gets it. ids must not repeat.
func (r *IngestIDs) Reserve(ctx context.Context, mcpID string, ids []string, at time.Time) ([]string, error) {
	rows, err := r.db.Pool.Query(ctx, `
		INSERT INTO ingest_ids (mcp_id, id, received_at)
		SELECT $1, u, $3 FROM unnest($2::text[]) AS u ORDER BY u -- one lock order: no deadlock between payloads
		ON CONFLICT (mcp_id, id) DO UPDATE SET received_at = EXCLUDED.received_at
			WHERE ingest_ids.received_at <= $4
		RETURNING id`, mcpID, ids, at, at.Add(-r.window))
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	fresh := make([]string, 0, len(ids))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap(err)
		}
		fresh = append(fresh, id)
	}
	return fresh, wrap(rows.Err())
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
