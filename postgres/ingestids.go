package postgres

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpscope/telemetry/ingest"
)

// IngestIDs is the shared duplicate filter of ingest (ingest.IDRegistry):
// the ids every instance accepted in the window, in PostgreSQL, each owned
// by the log record that holds its item, so that exactly-once holds across
// instances and no instance keeps them all in memory. A payload's claim is
// one statement in a transaction committed only once the log holds the
// payload (it runs while the log writes); the flusher stores only the
// items its records own, and settles the records whose claim it does not
// know (docs/exactly-once.md, "Shared dedup").
type IngestIDs struct {
	db     *DB
	window time.Duration
	// inFlight bounds the claims holding a connection while their log
	// writes, so that ingest never takes every connection of the pool.
	inFlight chan struct{}
}

// NewIngestIDs returns the registry for a duplicate window (24 h by
// contract).
func NewIngestIDs(db *DB, window time.Duration) *IngestIDs {
	n := max(1, int(db.Pool.Config().MaxConns)/2)
	return &IngestIDs{db: db, window: window, inFlight: make(chan struct{}, n)}
}

// idHash is the table's key of an MCP's item id: md5 of "<len(mcpID)>:"
// mcpID id, 16 bytes (the migration computes the same in SQL). A false
// duplicate needs a 128-bit collision among the window's ids.
func idHash(mcpID, id string) [16]byte {
	var b [160]byte
	return idHashTo(b[:0], mcpID, id)
}

// idHashTo is idHash writing its input into buf (reused across ids).
func idHashTo(buf []byte, mcpID, id string) [16]byte {
	buf = strconv.AppendInt(buf[:0], int64(len(mcpID)), 10)
	buf = append(buf, ':')
	buf = append(buf, mcpID...)
	buf = append(buf, id...)
	return md5.Sum(buf)
}

// nodeHash is the owner column of a log's records: 64 bits of md5 of the
// node (its id and its log's identity), never 0 (the rows carried over
// from the previous protocol).
func nodeHash(node string) int64 {
	s := md5.Sum([]byte(node))
	if h := int64(binary.LittleEndian.Uint64(s[:8])); h != 0 {
		return h
	}
	return 1
}

// takeOverSQL is the rule every claim follows on an id that has a row:
// the record (EXCLUDED) takes over a row older than the window ($4, in
// nanoseconds) before its receipt, a row it owns already (claims are
// idempotent: the flusher settling a record whose claim it does not
// know), or a row the previous protocol confirmed at this receipt (node
// 0, microseconds).
const takeOverSQL = `
	ON CONFLICT (h) DO UPDATE SET node = EXCLUDED.node, at = EXCLUDED.at
		WHERE ingest_claims.at <= EXCLUDED.at - $4
			OR (ingest_claims.node = EXCLUDED.node AND ingest_claims.at = EXCLUDED.at)
			OR (ingest_claims.node = 0 AND ingest_claims.at = EXCLUDED.at / 1000 * 1000)`

// claimNewSQL claims ids ($1) for one record ($2, $3: its owner) in the
// usual case, ids no row holds: a plain insert, cheaper than ON
// CONFLICT's speculative one, that fails whole (unique_violation) when
// any id has a row, and Claim then runs claimSQL. Keys in one lock order:
// no deadlock between payloads.
const claimNewSQL = `INSERT INTO ingest_claims (h, node, at) SELECT u, $2, $3 FROM unnest($1::uuid[]) AS u ORDER BY u`

// claimSQL is claimNewSQL taking over rows by takeOverSQL.
const claimSQL = claimNewSQL + takeOverSQL

// settleSQL claims the items of many records at once ($3: each item's
// receipt), by the same rule, and returns the ids they own.
const settleSQL = `
	INSERT INTO ingest_claims (h, node, at)
	SELECT u.h, $2, u.at FROM unnest($1::uuid[], $3::bigint[]) AS u (h, at) ORDER BY u.h` + takeOverSQL + `
	RETURNING h`

// Claim claims ids of an MCP for the log record of node received at at
// (unique among node's records: the owner), and returns the ids that are
// the record's: the others were accepted within the window before by
// another record (of any instance), and must not be stored by this one.
// The claim runs in a transaction committed only when durable yields nil
// (the log holds the payload); on an error from durable it is rolled back
// and that error returned. A process killed before the commit leaves no
// claim (PostgreSQL rolls back the transaction of a closed connection).
// ids must not repeat.
func (r *IngestIDs) Claim(ctx context.Context, node, mcpID string, ids []string, at time.Time, durable <-chan error) ([]string, error) {
	keys := make([][16]byte, len(ids))
	var buf [160]byte
	for i, id := range ids {
		keys[i] = idHashTo(buf[:0], mcpID, id)
	}
	nh, atNs := nodeHash(node), at.UnixNano()
	select {
	case r.inFlight <- struct{}{}:
		defer func() { <-r.inFlight }()
	case <-ctx.Done():
		return nil, wrap(ctx.Err())
	}
	var tx pgx.Tx
	defer func() {
		if tx != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx)) // after Commit: nothing
		}
	}()
	var tag pgconn.CommandTag
	for _, q := range []string{claimNewSQL, claimSQL} {
		var err error
		if tx, err = r.db.Pool.Begin(ctx); err != nil {
			return nil, wrap(err)
		}
		if q == claimNewSQL {
			tag, err = tx.Exec(ctx, q, keys, nh, atNs)
		} else {
			tag, err = tx.Exec(ctx, q, keys, nh, atNs, r.window.Nanoseconds())
		}
		if err == nil {
			break
		}
		if pe := (*pgconn.PgError)(nil); q == claimNewSQL && errors.As(err, &pe) && pe.Code == "23505" {
			// Some id has a row (a retry, or a row past the window):
			// the transaction is aborted; again with ON CONFLICT.
			_ = tx.Rollback(ctx)
			continue
		}
		return nil, wrap(err)
	}
	own := ids
	if int(tag.RowsAffected()) < len(ids) {
		// Some were accepted before (a retry): the record's own are the
		// rows it owns in its transaction.
		var err error
		if own, err = r.owned(ctx, tx, keys, ids, nh, atNs); err != nil {
			return nil, err
		}
	}
	select {
	case err := <-durable:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, wrap(ctx.Err())
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, wrap(err)
	}
	return own, nil
}

// owned returns the ids among keys that the owner (nh, atNs) holds.
func (r *IngestIDs) owned(ctx context.Context, tx pgx.Tx, keys [][16]byte, ids []string, nh, atNs int64) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT h FROM ingest_claims WHERE h = ANY($1) AND node = $2 AND at = $3`, keys, nh, atNs)
	if err != nil {
		return nil, wrap(err)
	}
	index := make(map[[16]byte]int, len(ids))
	for i, k := range keys {
		index[k] = i
	}
	own := make([]string, 0, len(ids))
	err = scanKeys(rows, func(k [16]byte) {
		if i, ok := index[k]; ok {
			own = append(own, ids[i])
		}
	})
	return own, err
}

// Settle claims the items of many records of node at once (the flusher:
// records replayed after a start, or whose claim failed or is not
// answered yet), each owned by its receipt (Claim.At, unique per node),
// and returns, for each record, the ids it does not own. Claims are
// idempotent, so a record that claimed its ids before keeps them. An id
// repeated across records goes to the first that owns it. It commits at
// once: the records are in the log.
func (r *IngestIDs) Settle(ctx context.Context, node string, recs []ingest.Claim) ([][]string, error) {
	type item struct {
		rec int
		id  string
	}
	lost := make([][]string, len(recs))
	// Each round claims every key once; a key repeated in several records
	// goes round by round to its next candidate until one owns it (rare:
	// retries of one payload to one instance whose first claims failed).
	byKey := map[[16]byte][]item{}
	var order [][16]byte
	for i, rc := range recs {
		for _, id := range rc.IDs {
			k := idHash(rc.MCPID, id)
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], item{i, id})
		}
	}
	nh := nodeHash(node)
	for len(order) > 0 {
		keys := order
		ats := make([]int64, len(keys))
		for i, k := range keys {
			ats[i] = recs[byKey[k][0].rec].At.UnixNano()
		}
		rows, err := r.db.Pool.Query(ctx, settleSQL, keys, nh, ats, r.window.Nanoseconds())
		if err != nil {
			return nil, wrap(err)
		}
		owned := make(map[[16]byte]bool, len(keys))
		if err := scanKeys(rows, func(k [16]byte) { owned[k] = true }); err != nil {
			return nil, err
		}
		order = nil
		for _, k := range keys {
			cands := byKey[k]
			if owned[k] {
				for _, c := range cands[1:] { // a repeat of an item stored once
					lost[c.rec] = append(lost[c.rec], c.id)
				}
				continue
			}
			lost[cands[0].rec] = append(lost[cands[0].rec], cands[0].id)
			if len(cands) > 1 {
				byKey[k] = cands[1:]
				order = append(order, k)
			}
		}
	}
	return lost, nil
}

func scanKeys(rows pgx.Rows, f func([16]byte)) error {
	defer rows.Close()
	var k [16]byte
	for rows.Next() {
		if err := rows.Scan(&k); err != nil {
			return wrap(err)
		}
		f(k)
	}
	return wrap(rows.Err())
}

// Expire deletes up to limit ids older than the window and returns how many
// it deleted; call it until it returns less than limit.
func (r *IngestIDs) Expire(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := r.db.Pool.Exec(ctx, `
		DELETE FROM ingest_claims WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM ingest_claims WHERE at <= $1 LIMIT $2))`, now.Add(-r.window).UnixNano(), limit)
	if err != nil {
		return 0, wrap(err)
	}
	return int(tag.RowsAffected()), nil
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
