package clickhouse

// The insert ledger: how a retried insert finds, and completes, the
// rollups that an insert cut short left out.
//
// An insert into events runs every rollup view on the same block, but not
// as one transaction: each view's rows are a part of their own, committed
// one after the other, so a server killed (or a view failing) half-way
// leaves the raw rows stored and some rollups without them. The flusher's
// retry finds those rows stored and leaves them out; the rollups would stay
// short for good.
//
// So every insert carries, for each UTC day of its rows (and on a cluster
// for each shard), one marker row: an item of a reserved MCP id naming the
// write-ahead-log records of the insert, "~wal/<day>/<node>/<runs>/<slot>"
// (runs: the record numbers, "12-40,43-44"). The marker is in the same
// block as the rows it names, so it lands in the same part of events as
// they do, and each view turns it into a row of the same reserved MCP id in
// the same part of its rollup as the rows it derived from them: a rollup
// holds an insert's rows of a day if and only if it holds its marker.
// After a retry, CompleteViews lists the markers that events holds for the
// retried records and, for each rollup that misses one, re-runs that
// view's own SELECT over exactly the rows (and the marker) of that insert.
//
// Markers are ordinary rows under ids no MCP can have (MCP ids are
// generated, "mcp_..."), so every read, which names its MCP, ignores them;
// they cost one row per insert and day in events and in each rollup, and go
// with their day's partition (retention). Their account is empty.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/go-faster/city"

	"github.com/mcpscope/telemetry/analytics"
)

// MarkerPrefix starts the MCP id of every insert marker.
const MarkerPrefix = "~wal/"

// markerRows returns the marker rows of an insert of rows: one per node,
// UTC day and sharding slot. They are deterministic (the same rows give the
// same markers), so that the retry of an identical block is still
// recognized as a duplicate by replicated tables.
func markerRows(rows []analytics.StoredRow, slots uint64) []analytics.StoredRow {
	type key struct {
		node string
		day  int64
	}
	// A batch's rows come in runs of one record and day: a record's seq
	// is kept once per run, and the map looked up when the run changes.
	seqs := map[key]*[]uint64{}
	var (
		lastKey key
		last    *[]uint64
	)
	for i := range rows {
		k := key{rows[i].Node, analytics.DayOf(rows[i].Item.Timestamp)}
		if last == nil || k != lastKey {
			if last = seqs[k]; last == nil {
				last = new([]uint64)
				seqs[k] = last
			}
			lastKey = k
		}
		if n := len(*last); n == 0 || (*last)[n-1] != rows[i].Seq {
			*last = append(*last, rows[i].Seq)
		}
	}
	keys := make([]key, 0, len(seqs))
	for k := range seqs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].node < keys[j].node || keys[i].node == keys[j].node && keys[i].day < keys[j].day
	})
	var out []analytics.StoredRow
	for _, k := range keys {
		day := time.Unix(k.day*86400, 0).UTC()
		runs := formatRuns(*seqs[k])
		for slot := range slots {
			out = append(out, analytics.StoredRow{MCPID: markerID(day, k.node, runs, slot, slots), Node: k.node, ReceivedAt: day,
				Item: analytics.Item{Timestamp: day, Method: "tools/call", Name: "~", Status: analytics.StatusError, ErrorType: "~",
					SessionID: "~", ClientName: "~", ClientVersion: "~", ServerVersion: "~"}})
		}
	}
	return out
}

// markerID names a marker that the Distributed events table sends to
// slot (cityHash64(mcp_id) modulo the cluster's total shard weight, as
// its sharding key does): the suffix after the slot is the first number
// that lands it there.
func markerID(day time.Time, node, runs string, slot, slots uint64) string {
	base := markerDayPrefix(day, node) + runs + "/" + strconv.FormatUint(slot, 10) + "."
	for n := 0; ; n++ {
		id := base + strconv.Itoa(n)
		if slots <= 1 || city.CH64([]byte(id))%slots == slot {
			return id
		}
	}
}

func markerDayPrefix(day time.Time, node string) string {
	return MarkerPrefix + day.UTC().Format("20060102") + "/" + node + "/"
}

// formatRuns renders record numbers as sorted runs: "3-7,9-9".
func formatRuns(seqs []uint64) string {
	s := slices.Clone(seqs)
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		i = j + 1
	}
	return b.String()
}

// run is an inclusive range of record numbers.
type run struct{ from, to uint64 }

// parseMarker reads the runs of a marker id after its day and node prefix,
// and the block it names (the id without its slot), or ok false.
func parseMarker(id, prefix string) (block string, runs []run, ok bool) {
	rest, found := strings.CutPrefix(id, prefix)
	if !found {
		return "", nil, false
	}
	list, slot, found := strings.Cut(rest, "/")
	if !found || strings.Contains(slot, "/") {
		return "", nil, false
	}
	for _, r := range strings.Split(list, ",") {
		a, b, found := strings.Cut(r, "-")
		from, err1 := strconv.ParseUint(a, 10, 64)
		to, err2 := strconv.ParseUint(b, 10, 64)
		if !found || err1 != nil || err2 != nil || to < from {
			return "", nil, false
		}
		runs = append(runs, run{from, to})
	}
	return prefix + list, runs, true
}

// slots returns the total shard weight of the cluster, the modulus of the
// events table's sharding (1 on a single server), read once.
func (db *Sink) slots(ctx context.Context) (uint64, error) {
	if db.cluster == "" {
		return 1, nil
	}
	if w := db.shardWeight.Load(); w > 0 {
		return w, nil
	}
	var w uint64
	err := db.conn.QueryRow(ctx, "SELECT toUInt64(sum(w)) FROM (SELECT shard_num, any(shard_weight) AS w FROM system.clusters WHERE cluster = ? GROUP BY shard_num)", db.cluster).Scan(&w)
	if err != nil {
		return 0, wrapErr("cluster weights", err)
	}
	if w == 0 {
		w = 1
	}
	db.shardWeight.Store(w)
	return w, nil
}

// onEveryShard runs f once per shard, on a connection to the first replica
// of the shard that answers (the store's own on a single server), with
// table naming the shard's local tables. With replicated tables, f gets a
// replica that has first fetched every part its shard's replication log
// holds for the tables named (SYSTEM SYNC REPLICA): what one replica
// committed just before it died must be seen before it is judged missing.
// While a part is only on a replica that is down, that wait times out, the
// call fails as unavailable, and the flusher retries later.
func (db *core) onEveryShard(ctx context.Context, sync []string, f func(context.Context, driver.Conn) error) error {
	if db.cluster == "" {
		return f(ctx, db.conn)
	}
	shards, err := db.shardReplicas(ctx)
	if err != nil {
		return err
	}
	for n, replicas := range shards {
		if err := db.onFirstAnswering(ctx, replicas, sync, f); err != nil {
			return wrapErr(fmt.Sprintf("shard %d", n+1), err)
		}
	}
	return nil
}

// onFirstAnswering runs f once, on the first of replicas that answers and
// syncs (syncReplica); a failure of f is not retried on another replica.
func (db *core) onFirstAnswering(ctx context.Context, replicas []string, sync []string, f func(context.Context, driver.Conn) error) error {
	var lastErr error
	for _, addr := range replicas {
		conn, err := dial(db.cfg, []string{addr}, 1)
		if err != nil {
			lastErr = fmt.Errorf("host %s: %w", addr, err)
			continue
		}
		if err = conn.Ping(ctx); err == nil {
			err = db.syncReplica(ctx, conn, sync)
		}
		if err == nil {
			err = f(ctx, conn)
			conn.Close()
			if err != nil {
				return fmt.Errorf("host %s: %w", addr, err)
			}
			return nil
		}
		conn.Close()
		lastErr = fmt.Errorf("host %s: %w", addr, err)
	}
	return lastErr
}

// syncReplicaTimeout bounds the wait for a replica to fetch its shard's
// parts before a ledger check.
const syncReplicaTimeout = 20 * time.Second

func (db *core) syncReplica(ctx context.Context, conn driver.Conn, tables []string) error {
	if !db.cfg.Replicated {
		return nil
	}
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"receive_timeout": int(syncReplicaTimeout / time.Second)}))
	for _, t := range tables {
		if err := conn.Exec(ctx, "SYSTEM SYNC REPLICA "+db.local(t)); err != nil {
			return wrapErr("waiting for this replica to fetch the parts of "+t+" its shard committed "+
				"(a replica that is down may hold the only copy of an insert that was cut short)", err)
		}
	}
	return nil
}

// rollupView is a materialized view on events: the rollup it writes to and
// its SELECT, as the migrations render them for this store, split around
// the table it reads (which a completion replaces). A view may read
// another view's output instead of events (parent: the breakdown of 008,
// fed through a Null table); a completion then derives its rows from the
// insert's events through the parent's SELECT first.
type rollupView struct {
	table         string // the rollup's name ("mcp_daily"), local or not
	target        string // what the view writes to: db.table or db.table_local
	before, after string // the view's SELECT up to "FROM <source>", and after it
	parent        *rollupView
}

var (
	viewStatement = regexp.MustCompile(`(?s)^CREATE MATERIALIZED VIEW IF NOT EXISTS (\S+)(?: ON CLUSTER '(?:[^'\\]|\\.)*')? TO (\S+) AS\s+(SELECT.*)$`)
	dropStatement = regexp.MustCompile(`^DROP TABLE IF EXISTS (\S+)(?: ON CLUSTER .*)?$`)
	nullTable     = regexp.MustCompile(`(?s)^CREATE TABLE IF NOT EXISTS (\S+)(?: ON CLUSTER '(?:[^'\\]|\\.)*')?\s*\(.*\)\s*ENGINE = Null$`)
)

// derive renders the SELECT of the view's rows from the events rows that
// source selects.
func (v *rollupView) derive(source string) string {
	if v.parent != nil {
		source = "(" + v.parent.derive(source) + ")"
	}
	return v.before + "FROM " + source + "\n" + v.after
}

// rollupViews lists the views into rollups from the rendered migrations,
// as the last of them leaves them (a view dropped and created again reads
// what its last CREATE says). A view into a Null table is no rollup (it
// stores nothing) but the parent of the views that read it; two views with
// the same SELECT from one parent (008: one fires on 18.16, the other on
// later versions) count as one.
func (db *Sink) rollupViews() ([]rollupView, error) {
	migs, err := loadMigrations(db.templateData())
	if err != nil {
		return nil, err
	}
	type named struct {
		name string
		view *rollupView
		null bool // writes to a Null table
	}
	var all []named
	nulls := map[string]bool{}
	from := func(table string) *regexp.Regexp {
		return regexp.MustCompile(`FROM ` + regexp.QuoteMeta(table) + `(\s|$)`)
	}
	for _, m := range migs {
		for _, stmt := range m.statements {
			if t := nullTable.FindStringSubmatch(stmt); t != nil {
				nulls[t[1]] = true
			}
			if d := dropStatement.FindStringSubmatch(stmt); d != nil {
				all = slices.DeleteFunc(all, func(n named) bool { return n.name == d[1] })
				continue
			}
			v := viewStatement.FindStringSubmatch(stmt)
			if v == nil {
				continue
			}
			view := &rollupView{table: strings.TrimSuffix(strings.TrimPrefix(v[2], db.db+"."), "_local"), target: v[2]}
			sources := map[string]*rollupView{db.local("events"): nil}
			for _, n := range all {
				sources[n.name], sources[n.view.target] = n.view, n.view
			}
			found := 0
			for table, parent := range sources {
				at := from(table).FindAllStringIndex(v[3], -1)
				if len(at) == 0 {
					continue
				}
				found += len(at)
				view.before, view.after, view.parent = v[3][:at[0][0]], v[3][at[0][1]:], parent
			}
			if found != 1 {
				return nil, fmt.Errorf("clickhouse: view into %s: its SELECT must read events or one earlier view once", v[2])
			}
			all = append(all, named{name: v[1], view: view, null: nulls[v[2]]})
		}
	}
	var views []rollupView
	for _, n := range all {
		if n.null {
			continue
		}
		if i := slices.IndexFunc(views, func(w rollupView) bool { return w.target == n.view.target }); i >= 0 {
			if w := views[i]; w.parent != n.view.parent || w.before != n.view.before || w.after != n.view.after {
				return nil, fmt.Errorf("clickhouse: two different views write %s: the ledger cannot tell their parts apart", n.view.target)
			}
			continue
		}
		views = append(views, *n.view)
	}
	return views, nil
}

// InsertedSeqs returns which write-ahead-log records of node, among
// fromSeq..toSeq, already have rows in events, and of which UTC days: a
// replay after a crash between an insert and the log's checkpoint, or the
// retry of a failed insert, leaves them out instead of counting them
// twice, and inserts the days an insert cut short did not store. The
// records' items have timestamps within tsFrom..tsTo, which bounds the day
// partitions read (and the primary key range), so the check costs a read
// of those days' ingest columns, not of the whole table. Each shard is
// asked on one replica, once that replica holds every part its shard
// committed (onEveryShard).
func (db *Sink) InsertedSeqs(ctx context.Context, node string, fromSeq, toSeq uint64, tsFrom, tsTo time.Time) (map[analytics.RecordDay]bool, error) {
	type seqDay struct {
		seq uint64
		day time.Time
	}
	if err := db.waitInsertsGone(ctx, node); err != nil {
		return nil, err
	}
	var found []seqDay
	q := "SELECT DISTINCT ingest_seq, toDate(ts) FROM " + db.local("events") +
		" WHERE ts >= ? AND ts <= ? AND ingest_node = ? AND ingest_seq >= ? AND ingest_seq <= ?"
	args := []any{clampTime(tsFrom.Add(-time.Second)), clampTime(tsTo.Add(time.Second)), node, max(fromSeq, 1), toSeq}
	err := db.onEveryShard(ctx, []string{"events"}, func(ctx context.Context, conn driver.Conn) error {
		return db.queryOn(ctx, conn, "inserted seqs", q, args, func() []any { r := appendRow(&found); return []any{&r.seq, &r.day} })
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[analytics.RecordDay]bool, len(found))
	for _, r := range found {
		seen[analytics.RecordDay{Seq: r.seq, Day: analytics.DayOf(r.day)}] = true
	}
	return seen, nil
}

// CompleteViews makes every rollup hold every insert of node's records
// fromSeq..toSeq (items within tsFrom..tsTo) that events holds: for each
// marker of those records in events that a rollup lacks, it runs that
// rollup's view over the insert's rows of that day and shard, marker
// included, in one INSERT (so one part: the rows and their marker commit
// together, and a repair cut short is found and redone by the next call).
// It returns how many (insert, rollup) pairs it completed.
func (db *Sink) CompleteViews(ctx context.Context, node string, fromSeq, toSeq uint64, tsFrom, tsTo time.Time) (int, error) {
	if err := db.waitInsertsGone(ctx, node); err != nil {
		return 0, err
	}
	views, err := db.rollupViews()
	if err != nil {
		return 0, err
	}
	tables := []string{"events"}
	for _, v := range views {
		tables = append(tables, v.table)
	}
	find := db.findMarkers(node, tsFrom, tsTo)
	completed := 0
	err = db.onEveryShard(ctx, tables, func(ctx context.Context, conn driver.Conn) error {
		type marker struct {
			id  string
			day time.Time
		}
		var found []marker
		if err := db.queryOn(ctx, conn, "insert markers", find, nil, func() []any { m := appendRow(&found); return []any{&m.id, &m.day} }); err != nil {
			return err
		}
		type block struct {
			day     time.Time
			runs    []run
			markers []string
		}
		blocks := map[string]*block{}
		var all []string
		for _, m := range found {
			key, runs, ok := parseMarker(m.id, markerDayPrefix(m.day, node))
			if !ok || !slices.ContainsFunc(runs, func(r run) bool { return r.to >= fromSeq && r.from <= toSeq }) {
				continue
			}
			if blocks[key] == nil {
				blocks[key] = &block{day: m.day, runs: runs}
			}
			blocks[key].markers = append(blocks[key].markers, m.id)
			all = append(all, m.id)
		}
		if len(all) == 0 {
			return nil
		}
		keys := make([]string, 0, len(blocks))
		for k := range blocks {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, v := range views {
			var present, cols []string
			if err := db.queryOn(ctx, conn, "insert markers of "+v.table, fmt.Sprintf("SELECT DISTINCT mcp_id FROM %s WHERE mcp_id IN (%s)", v.target, quoteList(all)),
				nil, func() []any { return []any{appendRow(&present)} }); err != nil {
				return err
			}
			for _, k := range keys {
				b := blocks[k]
				if slices.ContainsFunc(b.markers, func(id string) bool { return slices.Contains(present, id) }) {
					continue // the insert's part of this rollup is there
				}
				if cols == nil {
					if cols, err = db.rollupColumns(ctx, conn, v); err != nil {
						return err
					}
				}
				if err := db.completeView(ctx, conn, v, cols, node, b.day, b.runs, b.markers); err != nil {
					return err
				}
				completed++
			}
		}
		return nil
	})
	return completed, err
}

// findMarkers is the query of the insert markers of node in events (a
// shard's local table) for the items within tsFrom..tsTo: their ids and days.
func (db *Sink) findMarkers(node string, tsFrom, tsTo time.Time) string {
	first, last := analytics.UTCDay(clampTime(tsFrom)), analytics.UTCDay(clampTime(tsTo))
	var ranges []string
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		p := markerDayPrefix(d, node)
		ranges = append(ranges, fmt.Sprintf("(mcp_id >= %s AND mcp_id < %s)", QuoteString(p), QuoteString(p[:len(p)-1]+"0")))
	}
	return fmt.Sprintf("SELECT DISTINCT mcp_id, toDate(ts) FROM %s WHERE ts >= %s AND ts < %s AND (%s)",
		db.local("events"), timeLit(first), timeLit(last.AddDate(0, 0, 1)), strings.Join(ranges, " OR "))
}

// rollupColumns lists the columns of a view's rollup, which a completion
// names in its INSERT and picks by name from the view's SELECT (whose
// column order may differ from the table's).
func (db *Sink) rollupColumns(ctx context.Context, conn driver.Conn, v rollupView) ([]string, error) {
	var cols []string
	database, table, _ := strings.Cut(v.target, ".")
	if err := db.queryOn(ctx, conn, "columns of "+v.table, "SELECT name FROM system.columns WHERE database = ? AND table = ? ORDER BY name",
		[]any{database, table}, func() []any { return []any{appendRow(&cols)} }); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("clickhouse: complete %s: no columns found for %s", v.table, v.target)
	}
	return cols, nil
}

// completeView re-derives into one rollup the rows (and markers) of one
// insert of one day, as its view would have, in one INSERT.
func (db *Sink) completeView(ctx context.Context, conn driver.Conn, v rollupView, cols []string, node string, day time.Time, runs []run, markers []string) error {
	seqs := make([]string, len(runs))
	for i, r := range runs {
		seqs[i] = fmt.Sprintf("ingest_seq BETWEEN %d AND %d", r.from, r.to)
	}
	source := fmt.Sprintf("(SELECT * FROM %s WHERE ts >= %s AND ts < %s AND ingest_node = %s AND (mcp_id IN (%s) OR %s))",
		db.local("events"), timeLit(day), timeLit(day.AddDate(0, 0, 1)), QuoteString(node), quoteList(markers), strings.Join(seqs, " OR "))
	list := strings.Join(cols, ", ")
	stmt := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM (%s)", v.target, list, list, v.derive(source))
	return wrapErr("complete "+v.table, conn.Exec(clickhouse.Context(ctx, clickhouse.WithSettings(oneBlockPerView(clickhouse.Settings{}))), stmt))
}

// insertQueryID is the query_id of an insert's attempts on this store's
// database (analytics.InsertID names the insert: it starts with its node).
func (db *Sink) insertQueryID(insertID string) string { return "ingest:" + db.db + ":" + insertID }

// insertGoneTimeout bounds the wait for a node's earlier inserts to end.
const insertGoneTimeout = 2 * time.Minute

// processesQuery counts the queries still running of a node's inserts:
// the inserts themselves, and on a cluster the shards' inserts they
// started (their initial_query_id).
const processesQuery = "SELECT count() FROM system.processes WHERE startsWith(query_id, ?) OR startsWith(initial_query_id, ?)"

// waitInsertsGone returns once no server runs an insert of node's records
// (their query ids, insertQueryID, start with the node's prefix). A client
// that gave up on an insert (a timeout, a broken connection, a process
// killed) leaves the server storing it: events first, then each view's
// part, so a check made meanwhile would find the raw rows stored and a
// rollup short, and complete a rollup that the attempt then completes too.
// The flusher inserts one batch at a time, so whatever of the node still
// runs is an attempt given up on: the retry's own batch, or, after a
// restart, the batch the killed process was inserting (whose records the
// replay may group otherwise). On a cluster every replica of every shard
// is asked; one that cannot be reached runs nothing that will land.
func (db *Sink) waitInsertsGone(ctx context.Context, node string) error {
	prefix := db.insertQueryID(node + "/")
	ctx, cancel := context.WithTimeout(ctx, insertGoneTimeout)
	defer cancel()
	running := func(conn driver.Conn) (bool, error) {
		var n uint64
		if err := conn.QueryRow(ctx, processesQuery, prefix, prefix).Scan(&n); err != nil {
			return false, wrapErr("running inserts of "+node, err)
		}
		return n > 0, nil
	}
	var hosts []string
	if db.cluster != "" {
		shards, err := db.shardReplicas(ctx)
		if err != nil {
			return err
		}
		for _, replicas := range shards {
			hosts = append(hosts, replicas...)
		}
	}
	for {
		busy := false
		if db.cluster == "" {
			var err error
			if busy, err = running(db.conn); err != nil {
				return err
			}
		}
		for _, addr := range hosts {
			conn, err := dial(db.cfg, []string{addr}, 1)
			if err != nil {
				continue
			}
			b, err := running(conn)
			conn.Close()
			busy = busy || b && err == nil
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return wrapErr("waiting for an earlier insert of "+node+" to end", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
