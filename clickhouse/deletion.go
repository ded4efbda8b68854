package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/accounts"
)

var _ accounts.TelemetryDeleter = (*Lifecycle)(nil)

// mutationPoll is how often a deletion checks whether its mutations are
// done; resubmitAfterIdlePolls polls in a row with rows left and no
// mutation running run the mutations again (deleteUntilGone).
var mutationPoll = 500 * time.Millisecond

const resubmitAfterIdlePolls = 4

// DeleteUserTelemetry implements accounts.TelemetryDeleter with mutations
// (ALTER TABLE ... DELETE, asynchronous on the server) on every host's
// local tables, in every table that holds a person's rows (lifecycle.go):
// the raw items whose user_id is userID, the per-user rows of user_key
// u:userID (the nightly figures' exact user sets), and the per-session
// rows (session_daily, session_span) of the sessions they used (those keep
// the first user id of a session, and the session id itself). The session
// ids go in as many statements as keep each under max_query_size. It waits
// until no raw item of the person received before the call is left
// (deleteUntilGone); items received later are not deleted. What the other
// rollups hold stays: counts, sums, latency digests and distinct-count
// sketches (uniqHLL12) aggregated with everyone else's, which cannot be
// taken apart item by item (docs/data-lifecycle.md).
func (db *Lifecycle) DeleteUserTelemetry(ctx context.Context, mcpID, userID string) error {
	all, err := tables()
	if err != nil {
		return err
	}
	cutoff := time.Now()
	mcp := QuoteString(mcpID)
	stmts := func() ([]string, error) {
		var sessions []string
		err := db.query(ctx, "deletion sessions", "SELECT DISTINCT session_id FROM "+db.db+".events WHERE mcp_id = ? AND user_id = ?",
			[]any{mcpID, userID}, func() []any { s := appendRow(&sessions); return []any{s} })
		if err != nil {
			return nil, err
		}
		var stmts []string
		for _, t := range all {
			head := fmt.Sprintf("ALTER TABLE %s DELETE WHERE mcp_id = %s AND ", db.local(t.name), mcp)
			switch t.person {
			case byUserID:
				stmts = append(stmts, head+"user_id = "+QuoteString(userID))
			case byUserKey:
				stmts = append(stmts, head+"user_key = "+QuoteString(UserKey(userID, "")))
			case bySessionID:
				stmts = append(stmts, inChunks(head+"session_id IN ", "", sessions)...)
			}
		}
		return stmts, nil
	}
	return db.deleteUntilGone(ctx, cutoff, stmts, "mcp_id = ? AND user_id = ?", mcpID, userID)
}

// DeleteMCPTelemetry implements accounts.TelemetryDeleter: mutations on
// every table with the MCP's rows (every table with an mcp_id column but
// the usage counts, lifecycle.go) of every host, then a wait until the raw
// table holds none of its rows received before the call.
func (db *Lifecycle) DeleteMCPTelemetry(ctx context.Context, mcpID string) error {
	names, err := tableNames(lifecycleTable.deletedWithMCP)
	if err != nil {
		return err
	}
	cutoff := time.Now()
	stmts := make([]string, len(names))
	for i, t := range names {
		stmts[i] = fmt.Sprintf("ALTER TABLE %s DELETE WHERE mcp_id = %s", db.local(t), QuoteString(mcpID))
	}
	return db.deleteUntilGone(ctx, cutoff, func() ([]string, error) { return stmts, nil }, "mcp_id = ?", mcpID)
}

// deleteUntilGone runs the mutations stmts lists, then polls until no raw
// item matching cond and received up to cutoff's second is left
// (received_at holds whole seconds, so an item of the request's own second
// counts as received before it).
//
// A mutation changes only the parts that exist when it starts. An item
// received before the request may still wait in some instance's
// write-ahead log then, and be inserted after: so while such items are
// left once every mutation of the raw table has finished, the mutations
// are listed (stmts is called again: the sessions may have grown) and run
// again. Once none is left, it keeps polling for Config.DeletionGrace:
// another instance may store such an item within its flush lag (an
// instance that cannot reach ClickHouse for longer stores it after the
// deletion; README). Items received later are not the request's: waiting
// for them could last forever while ingest goes on.
func (db *Lifecycle) deleteUntilGone(ctx context.Context, cutoff time.Time, stmts func() ([]string, error), cond string, args ...any) error {
	run := func() error {
		list, err := stmts()
		if err == nil {
			err = db.mutate(ctx, list)
		}
		return err
	}
	if err := run(); err != nil {
		return err
	}
	// Counted shard by shard on the local tables, on a replica that has
	// fetched what its shard holds (a row stored late on one replica must
	// not be missed by a count on the other).
	q := fmt.Sprintf("SELECT count() FROM %s WHERE %s AND received_at <= %s %s", db.local("events"), cond, timeLit(cutoff), duringMutations)
	left := func() (uint64, error) {
		var total uint64
		err := db.onEveryShard(ctx, []string{"events"}, func(ctx context.Context, conn driver.Conn) error {
			var n uint64
			err := conn.QueryRow(ctx, q, args...).Scan(&n)
			total += n
			return err
		})
		return total, wrapErr("delete wait", err)
	}
	idle := 0                   // polls in a row that found no mutation of the raw table running
	var noneLeftSince time.Time // since when the polls find none left
	for {
		n, err := left()
		if err != nil {
			return err
		}
		if db.knobs.deletionPolled != nil {
			db.knobs.deletionPolled(n)
		}
		if n == 0 {
			if noneLeftSince.IsZero() {
				noneLeftSince = time.Now()
			}
			if time.Since(noneLeftSince) >= db.cfg.DeletionGrace {
				return nil
			}
		} else {
			noneLeftSince = time.Time{}
			running, err := db.mutationsRunning(ctx, "events")
			if err != nil {
				return err
			}
			if running {
				idle = 0
			} else {
				idle++
			}
			// A few idle polls in a row, not one: a replica lists a
			// mutation only once it has read it from ZooKeeper, and a
			// mutation run again for nothing rewrites parts.
			if idle >= resubmitAfterIdlePolls {
				if err := run(); err != nil {
					return err
				}
				idle = 0
			}
		}
		if err := sleepCtx(ctx, mutationPoll); err != nil {
			return wrapErr("delete wait", err)
		}
	}
}

// duringMutations marks a query whose answer depends on how far
// asynchronous mutations have got: the ClickHouse 26 proof runs it there
// too but does not compare the answers.
const duringMutations = "/* during mutations */"

// sleepCtx waits d, or returns ctx's error once ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// mutationsRunning reports whether a mutation of table is unfinished on
// some host.
func (db *Lifecycle) mutationsRunning(ctx context.Context, table string) (bool, error) {
	name := strings.TrimPrefix(db.local(table), db.db+".")
	running := false
	err := db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND NOT is_done",
			db.db, name).Scan(&n); err != nil {
			return err
		}
		running = running || n > 0
		return nil
	})
	return running, wrapErr("delete wait", err)
}

// mutate runs the statements on every host (the local tables of a
// cluster; mutations do not pass through Distributed tables).
func (db *Lifecycle) mutate(ctx context.Context, stmts []string) error {
	return wrapErr("delete", db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		for _, s := range stmts {
			if err := conn.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}))
}
