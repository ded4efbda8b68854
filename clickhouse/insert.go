package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/go-faster/city"

	"github.com/mcpscope/telemetry/analytics"
)

// EventColumns is the column list of every insert into events: 18.16
// refuses a batch insert without one.
const EventColumns = `account_id, mcp_id, ts, ts_ms, received_at, id, session_id, method, name,
	is_error, error_type, error_message, duration_ms, has_duration, client_name, client_version,
	server_version, protocol_version, user_id, user_key, attr_keys, attr_values, ingest_node, ingest_seq,
	error_kind, response_bytes, args_hash, id_uuid`

// EventID is the SQL expression of an events row's item id: a UUID id is
// stored in id_uuid (16 bytes instead of 37; migration 013) with "" in
// id, any other id in id with the zero UUID in id_uuid. Reads select it
// AS id; ids that are no UUID, and rows stored before 013, read id as is.
const EventID = "if(id_uuid = toUUID('00000000-0000-0000-0000-000000000000'), id, toString(id_uuid))"

// hasEventID is true for rows of an item with an id.
const hasEventID = "(id != '' OR id_uuid != toUUID('00000000-0000-0000-0000-000000000000'))"

// UserKey is the identity that "users" counts: the user id, or the
// session id for an item without one. The prefixes keep a user id from
// colliding with somebody's session id.
func UserKey(userID, sessionID string) string {
	if userID != "" {
		return "u:" + userID
	}
	return "s:" + sessionID
}

var _ analytics.Sink = (*Sink)(nil)

// InsertRows writes rows to events (and through the views to every rollup)
// in one batch, with their insert markers (ledger.go): one block, so one
// part per UTC day the rows span (per shard on a cluster). Batch
// big (thousands of rows): every insert makes parts and runs the views.
// The rows' items are expected normalized and valid (analytics.Item).
func (db *Sink) InsertRows(ctx context.Context, rows []analytics.StoredRow) error {
	return db.InsertBatch(ctx, "", rows)
}

// InsertBatch is InsertRows under a flushed batch's insert id
// (analytics.InsertID; "": none), ClickHouse's query_id of the insert,
// which the retry of the batch waits on (waitInsertsGone).
func (db *Sink) InsertBatch(ctx context.Context, insertID string, rows []analytics.StoredRow) error {
	if len(rows) == 0 {
		return nil
	}
	slots, err := db.slots(ctx)
	if err != nil {
		return err
	}
	// The markers of the insert (ledger.go): in the same block, so in the
	// same parts as the rows they name, in events and in every rollup.
	markers := markerRows(rows, slots)
	b := db.ins.takeBlock()
	defer db.ins.putBlock(b)
	for i := range rows {
		b.add(&rows[i])
	}
	for i := range markers {
		b.add(&markers[i])
	}
	var id string
	if insertID != "" {
		id = db.insertQueryID(insertID)
	}
	return db.sendBlock(ctx, id, b)
}

// insertContext sets up a write through events (ExecWrite) as InsertRows
// sends its block (sendBlock): the block is pushed to the
// rollup views in parallel, measured about 20% faster on 2 cores; on a
// cluster, synchronously to the shards. Each view writes its result as
// one block, so one part per day partition with the insert's marker in it
// (the ledger's premise, ledger.go): oneBlockPerView.
func (db *Sink) insertContext(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(db.insertSettings()))
}

// insertSettings are the settings of an insert into events (insertContext).
func (db *Sink) insertSettings() clickhouse.Settings {
	return db.writeSettings(oneBlockPerView(clickhouse.Settings{"parallel_view_processing": 1}))
}

// oneBlockPerView adds to settings those that keep a view's result of one
// insert in one block, and returns them: a view's blocks are squashed
// into one up to min_insert_block_size_rows/bytes (1 Mi rows, 256 MiB by
// default; a profile may lower them), and a view with many keys
// (breakdown_daily past 100 000) would aggregate in two levels, one block
// per bucket. A flushed batch is bounded (ingest.flush_max_rows), so its
// views' results fit in memory whole.
func oneBlockPerView(settings clickhouse.Settings) clickhouse.Settings {
	settings["group_by_two_level_threshold"] = 0
	settings["group_by_two_level_threshold_bytes"] = 0
	settings["min_insert_block_size_rows"] = 1 << 40
	settings["min_insert_block_size_bytes"] = 1 << 40
	return settings
}

// StoredIDs calls fn with each (mcp, id) among ids that events already
// holds from an item received at or after since, with its latest receipt:
// the flusher's check for items accepted while the duplicate filter was
// incomplete (the service started while ClickHouse was down) or said
// "maybe" (docs/exactly-once.md). ids maps an MCP to item ids. It reads
// event_ids (migration 007), sorted by MCP and id hash, so its cost
// follows the ids asked about, not the MCP's volume.
func (db *Sink) StoredIDs(ctx context.Context, since time.Time, ids map[string][]string, fn func(mcpID, id string, receivedAt time.Time)) error {
	for mcpID, list := range ids {
		byHash := make(map[idHash][]string, len(list))
		hashes := make([]uint64, 0, len(list))
		for _, id := range list {
			h := hashID(id)
			if byHash[h] == nil {
				hashes = append(hashes, h.h1)
			}
			byHash[h] = append(byHash[h], id)
		}
		for len(hashes) > 0 {
			chunk := hashes[:min(len(hashes), storedIDsChunk)]
			hashes = hashes[len(chunk):]
			var b strings.Builder
			for i, h := range chunk {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatUint(h, 10))
			}
			q := fmt.Sprintf("SELECT id_hash, id_hash2, max(received_at) FROM %s.event_ids WHERE mcp_id = %s AND received_at >= %s AND id_hash IN (%s) GROUP BY id_hash, id_hash2",
				db.db, QuoteString(mcpID), timeLit(since), b.String())
			if err := db.storedHashes(ctx, q, func(h idHash, at time.Time) {
				for _, id := range byHash[h] {
					fn(mcpID, id, at)
				}
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// storedHashes runs a StoredIDs query q and calls fn with each row.
func (db *Sink) storedHashes(ctx context.Context, q string, fn func(h idHash, at time.Time)) error {
	rows, err := db.conn.Query(ctx, q)
	if err != nil {
		return wrapErr("stored ids", err)
	}
	defer rows.Close()
	var (
		h  idHash
		at time.Time
	)
	for rows.Next() {
		if err := rows.Scan(&h.h1, &h.h2, &at); err != nil {
			return wrapErr("stored ids", err)
		}
		fn(h, at)
	}
	return wrapErr("stored ids", rows.Err())
}

// idHash is an item id's two hashes in event_ids: cityHash64 of the id,
// and the low 32 bits of cityHash64 of its bytes reversed.
type idHash struct {
	h1 uint64
	h2 uint32
}

func hashID(id string) idHash {
	rev := []byte(id)
	slices.Reverse(rev)
	return idHash{city.CH64([]byte(id)), uint32(city.CH64(rev))}
}

// storedIDsChunk bounds the hashes of one StoredIDs query (up to 21 bytes
// each: far below the server's max_query_size, 256 KiB by default).
const storedIDsChunk = 8000

// quoteList renders strings as a comma-separated list of SQL literals.
func quoteList(vs []string) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(QuoteString(v))
	}
	return b.String()
}

// RecentIDs calls fn with the MCP, id and receipt time of every item with an
// id that was accepted at or after since, to rebuild the duplicate filter on
// start (each id is kept for the window from its first receipt). An
// item is at most analytics.MaxItemAge old when accepted, which bounds the
// partitions to read.
func (db *Sink) RecentIDs(ctx context.Context, since time.Time, fn func(mcpID, id string, receivedAt time.Time)) error {
	q := fmt.Sprintf("SELECT mcp_id, %s AS id, received_at FROM %s.events PREWHERE received_at >= %s WHERE ts >= %s AND %s",
		EventID, db.db, timeLit(since), timeLit(since.Add(-analytics.MaxItemAge-time.Hour)), hasEventID)
	rows, err := db.conn.Query(ctx, q)
	if err != nil {
		return wrapErr("recent ids", err)
	}
	defer rows.Close()
	var mcpID, id string
	var at time.Time
	for rows.Next() {
		if err := rows.Scan(&mcpID, &id, &at); err != nil {
			return wrapErr("recent ids", err)
		}
		fn(mcpID, id, at)
	}
	return wrapErr("recent ids", rows.Err())
}
