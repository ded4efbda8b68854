package postgres

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/mcpscope/telemetry/analytics"
)

// IngestIDs is the shared duplicate filter of ingest (analytics.IDRegistry):
// the ids every instance accepted in the window, in PostgreSQL, each owned
// by the log record that holds its item, so that exactly-once holds across
// instances and no instance keeps them all in memory. The claims of the
// payloads that arrive together are one statement in one transaction (a
// group), committed only once the log holds every one of them (it runs
// while the log writes); the flusher stores only the items its records
// own, and settles the records whose claim it does not know
// (docs/exactly-once.md, "Shared dedup").
type IngestIDs struct {
	db     *DB
	window time.Duration
	// maxGroups bounds the groups in flight, each holding a connection
	// while its payloads' log writes: the claims that arrive meanwhile
	// queue and form the next group.
	maxGroups int
	insertMu  sync.Mutex // held by the group whose statement runs
	mu        sync.Mutex
	queue     []*claimReq
	running   int
	groups    atomic.Int64 // groups claimed (tests)
}

// NewIngestIDs returns the registry for a duplicate window (24 h by
// contract).
func NewIngestIDs(db *DB, window time.Duration) *IngestIDs {
	n := min(maxClaimGroups, max(1, int(db.Pool.Config().MaxConns)/2))
	return &IngestIDs{db: db, window: window, maxGroups: n}
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

// claimCopySQL is how a group claims its keys in the usual case, keys no
// row holds: a binary COPY of its rows in key order (one lock order for
// every group: no deadlock between groups), cheaper than an INSERT of
// arrays and than ON CONFLICT's speculative insert, that fails whole
// (unique_violation) when any key has a row, and the group then runs
// claimSQL.
const claimCopySQL = `COPY ingest_claims (h, node, at) FROM STDIN (FORMAT binary)`

// claimSQL claims keys ($1) for their records ($2, $3: each key's owner)
// taking over rows by takeOverSQL, in key order; it returns the keys its
// records own.
const claimSQL = `
	INSERT INTO ingest_claims (h, node, at)
	SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS u (h, node, at) ORDER BY h` + takeOverSQL + `
	RETURNING h`

// maxClaimGroups bounds the claim groups in flight per instance: two, so
// that one group's statement runs while another waits for its log.
const maxClaimGroups = 2

// claimReq is one payload's claim waiting for its group.
type claimReq struct {
	ctx     context.Context
	ids     []string
	keys    [][16]byte
	node    int64
	at      int64
	durable <-chan error
	done    chan claimResult // buffered: the group never waits for Claim
}

type claimResult struct {
	own []string
	err error
}

// Claim claims ids of an MCP for the log record of node received at at
// (unique among node's records: the owner), and returns the ids that are
// the record's: the others were accepted within the window before by
// another record (of any instance), and must not be stored by this one.
// The claim joins a group (claimGroup) whose transaction commits only
// when durable yields nil (the log holds the payload); on an error from
// durable this payload's ids are not claimed and that error is returned.
// A process killed before the commit leaves no claim (PostgreSQL rolls
// back the transaction of a closed connection). ids must not repeat.
func (r *IngestIDs) Claim(ctx context.Context, node, mcpID string, ids []string, at time.Time, durable <-chan error) ([]string, error) {
	q := &claimReq{ctx: ctx, ids: ids, keys: make([][16]byte, len(ids)), node: nodeHash(node), at: at.UnixNano(),
		durable: durable, done: make(chan claimResult, 1)}
	var buf [160]byte
	for i, id := range ids {
		q.keys[i] = idHashTo(buf[:0], mcpID, id)
	}
	r.mu.Lock()
	r.queue = append(r.queue, q)
	if r.running < r.maxGroups {
		r.running++
		go r.runGroups()
	}
	r.mu.Unlock()
	select {
	case res := <-q.done:
		return res.own, res.err
	case <-ctx.Done():
		// The group may still commit: the record's claim is then the
		// flusher's to settle (idempotent).
		return nil, wrap(ctx.Err())
	}
}

// runGroups claims the queued payloads, group by group, until none is
// left. One group inserts at a time (insertMu): the payloads that arrive
// meanwhile form the next group, which inserts while the previous one
// waits for its log and commits.
func (r *IngestIDs) runGroups() {
	for {
		r.insertMu.Lock()
		r.mu.Lock()
		group := r.queue
		r.queue = nil
		if len(group) == 0 {
			r.running--
			r.mu.Unlock()
			r.insertMu.Unlock()
			return
		}
		r.mu.Unlock()
		r.groups.Add(1)
		r.claimGroup(group, r.insertMu.Unlock)
	}
}

// groupContext bounds a group's statements by the earliest deadline of
// its payloads' contexts, not by their cancellation: a claim no caller
// waits for still ends, and its record is settled by the flusher.
func groupContext(group []*claimReq) (context.Context, context.CancelFunc) {
	var deadline time.Time
	for _, q := range group {
		if d, ok := q.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
	}
	if deadline.IsZero() {
		return context.WithCancel(context.Background())
	}
	return context.WithDeadline(context.Background(), deadline)
}

// claimGroup claims the ids of a group of payloads in one transaction: one
// statement for all of them (then it calls inserted), committed once
// every payload is in the log.
// When the log refuses any of them (or one's caller gives up first), the
// whole transaction is rolled back and the survivors, whose records are
// on disk already, are claimed again at once (claimDurable): a payload
// refused by the log never holds a claim, and the others lose only ids
// another record claimed in between, which they answer as duplicates.
func (r *IngestIDs) claimGroup(group []*claimReq, inserted func()) {
	ctx, cancel := groupContext(group)
	defer cancel()
	var tx pgx.Tx
	defer func() {
		if tx != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx)) // after Commit: nothing
		}
	}()
	g := newClaimRows(group)
	owned, err := r.insertGroup(ctx, &tx, g)
	inserted()
	// Every payload's log answer; those refused are answered at once.
	survivors := group[:0:0]
	for _, q := range group {
		var derr error
		select {
		case derr = <-q.durable:
		case <-q.ctx.Done():
			derr = wrap(q.ctx.Err())
		}
		if derr != nil {
			q.done <- claimResult{err: derr}
		} else {
			survivors = append(survivors, q)
		}
	}
	switch {
	case err != nil:
	case len(survivors) < len(group):
		_ = tx.Rollback(ctx)
		tx = nil
		g = newClaimRows(survivors)
		owned, err = r.claimDurable(ctx, g)
	default:
		err = wrap(tx.Commit(ctx))
	}
	g.answer(survivors, owned, err)
}

// insertGroup begins the group's transaction (into *tx) and claims its
// rows: a COPY, or when some key has a row, claimSQL. It returns
// the keys owned, nil when all are.
func (r *IngestIDs) insertGroup(ctx context.Context, tx *pgx.Tx, g claimRows) (map[[16]byte]bool, error) {
	var err error
	if *tx, err = r.db.Pool.Begin(ctx); err != nil {
		*tx = nil
		return nil, wrap(err)
	}
	_, err = (*tx).Conn().PgConn().CopyFrom(ctx, bytes.NewReader(g.copyData()), claimCopySQL)
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "23505" {
		return nil, wrap(err)
	}
	// Some key has a row (a retry, or a row past the window): the
	// transaction is aborted; again with ON CONFLICT.
	_ = (*tx).Rollback(ctx)
	if *tx, err = r.db.Pool.Begin(ctx); err != nil {
		*tx = nil
		return nil, wrap(err)
	}
	rows, err := (*tx).Query(ctx, claimSQL, g.keys, g.nodes, g.ats, r.window.Nanoseconds())
	if err != nil {
		return nil, wrap(err)
	}
	owned := make(map[[16]byte]bool, len(g.keys))
	return owned, scanKeys(rows, func(k [16]byte) { owned[k] = true })
}

// claimDurable claims rows whose records are on disk: one statement,
// committed at once. It returns the keys owned.
func (r *IngestIDs) claimDurable(ctx context.Context, g claimRows) (map[[16]byte]bool, error) {
	owned := make(map[[16]byte]bool, len(g.keys))
	if len(g.keys) == 0 {
		return owned, nil
	}
	rows, err := r.db.Pool.Query(ctx, claimSQL, g.keys, g.nodes, g.ats, r.window.Nanoseconds())
	if err != nil {
		return nil, wrap(err)
	}
	return owned, scanKeys(rows, func(k [16]byte) { owned[k] = true })
}

// claimRows are the rows a group claims: each key once, for the first
// payload of the group that has it (a later one loses it: another record
// of the window has it), with that payload's owner.
type claimRows struct {
	keys     [][16]byte // in key order (newClaimRows)
	nodes    []int64
	ats      []int64
	first    map[[16]byte]*claimReq // when repeated
	repeated bool                   // a key is in several payloads
}

func newClaimRows(group []*claimReq) claimRows {
	type row struct {
		k [16]byte
		q int // the payload's place in the group
	}
	n := 0
	for _, q := range group {
		n += len(q.keys)
	}
	rows := make([]row, 0, n)
	for i, q := range group {
		for _, k := range q.keys {
			rows = append(rows, row{k, i})
		}
	}
	// In key order (bytewise, as PostgreSQL orders uuids: the lock order
	// of every group), a repeated key's first payload first.
	slices.SortFunc(rows, func(a, b row) int {
		if c := bytes.Compare(a.k[:], b.k[:]); c != 0 {
			return c
		}
		return a.q - b.q
	})
	g := claimRows{keys: make([][16]byte, 0, n), nodes: make([]int64, 0, n), ats: make([]int64, 0, n)}
	for i, rw := range rows {
		if i > 0 && rows[i-1].k == rw.k {
			g.repeated = true
			continue
		}
		q := group[rw.q]
		g.keys = append(g.keys, rw.k)
		g.nodes = append(g.nodes, q.node)
		g.ats = append(g.ats, q.at)
	}
	if g.repeated {
		g.first = make(map[[16]byte]*claimReq, len(g.keys))
		for _, rw := range rows {
			if _, ok := g.first[rw.k]; !ok {
				g.first[rw.k] = group[rw.q]
			}
		}
	}
	return g
}

// copyData is a group's rows in COPY's binary format: the header, then
// per row its three fields (uuid, bigint, bigint), each as its length
// and its bytes (big-endian), then the trailer.
func (g *claimRows) copyData() []byte {
	const header = "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	buf := make([]byte, 0, len(header)+len(g.keys)*46+2)
	buf = append(buf, header...)
	for i, k := range g.keys {
		buf = binary.BigEndian.AppendUint16(buf, 3)
		buf = binary.BigEndian.AppendUint32(buf, 16)
		buf = append(buf, k[:]...)
		buf = binary.BigEndian.AppendUint32(buf, 8)
		buf = binary.BigEndian.AppendUint64(buf, uint64(g.nodes[i]))
		buf = binary.BigEndian.AppendUint32(buf, 8)
		buf = binary.BigEndian.AppendUint64(buf, uint64(g.ats[i]))
	}
	return binary.BigEndian.AppendUint16(buf, 0xffff)
}

// answer tells each payload of the group the ids it owns (owned nil: every
// key claimed), or err.
func (g claimRows) answer(group []*claimReq, owned map[[16]byte]bool, err error) {
	for _, q := range group {
		if err != nil {
			q.done <- claimResult{err: err}
			continue
		}
		own := q.ids
		if owned != nil || g.repeated {
			own = make([]string, 0, len(q.ids))
			for i, k := range q.keys {
				if (owned == nil || owned[k]) && (g.first == nil || g.first[k] == q) {
					own = append(own, q.ids[i])
				}
			}
		}
		q.done <- claimResult{own: own}
	}
}

// Settle claims the items of many records of node at once (the flusher:
// records replayed after a start, or whose claim failed or is not
// answered yet), each owned by its receipt (Claim.At, unique per node),
// and returns, for each record, the ids it does not own. Claims are
// idempotent, so a record that claimed its ids before keeps them. An id
// repeated across records goes to the first that owns it. It commits at
// once: the records are in the log.
func (r *IngestIDs) Settle(ctx context.Context, node string, recs []analytics.IDClaim) ([][]string, error) {
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
		g := claimRows{keys: keys, nodes: make([]int64, len(keys)), ats: make([]int64, len(keys))}
		for i, k := range keys {
			g.nodes[i], g.ats[i] = nh, recs[byKey[k][0].rec].At.UnixNano()
		}
		owned, err := r.claimDurable(ctx, g)
		if err != nil {
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

// claimRowsPerPage is the most rows of ingest_claims a heap page holds:
// (8192 - 24) / (56 + 4) (tuple header and columns, line pointer).
const claimRowsPerPage = 136

// sweepsPerWindow is how often the table is swept for rows past the
// window: every eighth of it (3 hours of a day), so rows stay at most
// that long past the window, and each row is read about nine times.
const sweepsPerWindow = 8

// sweepChunkSQL takes the next chunk of $1 pages of the current sweep
// ($2: now, in nanoseconds) and returns its first page and whether the
// table has pages past the chunk. A sweep begins (at page 0) an eighth
// of the window ($3) after the last one began, whether or not that one
// reached the table's end (it does within one flusher round, but the
// end moves while the table grows); in between, the sweep goes on while
// it is behind the table's end (pages added since), else no row.
const sweepChunkSQL = `
	WITH t AS (SELECT pg_relation_size('ingest_claims') / current_setting('block_size')::bigint AS pages)
	UPDATE ingest_claims_sweep SET
		next_block = CASE WHEN started_at <= $2::bigint - $3::bigint THEN 0 ELSE next_block END + $1::bigint,
		started_at = CASE WHEN started_at <= $2::bigint - $3::bigint THEN $2::bigint ELSE started_at END
	FROM t
	WHERE next_block < t.pages OR started_at <= $2::bigint - $3::bigint
	RETURNING next_block - $1::bigint, next_block < t.pages`

// expireSQL deletes the rows received before $3 in the pages from $1 to
// $2 (a TID range scan: it reads those pages only).
const expireSQL = `DELETE FROM ingest_claims WHERE ctid >= $1 AND ctid < $2 AND at <= $3`

// pageTID is the first tuple id of a page.
func pageTID(page int64) pgtype.TID {
	return pgtype.TID{BlockNumber: uint32(page), Valid: true}
}

// Expire deletes ids older than the window, a chunk of the table's pages
// at a time (the sweep, docs/exactly-once.md, "Shared dedup"): at most
// limit rows (at least a page's) from at most limit/claimRowsPerPage
// pages. It returns how many it deleted, or limit when the sweep has
// more of the table to read: call it until it returns less than limit.
// Between sweeps it returns 0 at once; the instances share each sweep.
func (r *IngestIDs) Expire(ctx context.Context, now time.Time, limit int) (int, error) {
	pages := int64(max(1, limit/claimRowsPerPage))
	var first int64
	var more bool
	err := r.db.Pool.QueryRow(ctx, sweepChunkSQL, pages, now.UnixNano(), r.window.Nanoseconds()/sweepsPerWindow).Scan(&first, &more)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap(err)
	}
	tag, err := r.db.Pool.Exec(ctx, expireSQL, pageTID(first), pageTID(first+pages), now.Add(-r.window).UnixNano())
	if err != nil {
		return 0, wrap(err)
	}
	if more {
		return limit, nil
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
