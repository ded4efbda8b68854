package analytics

import (
	"context"
	"time"
)

// IDRegistry is a duplicate filter of item ids shared by every instance
// (postgres.IngestIDs): with one, a retry that reaches another instance is
// still dropped, and each instance's own filter is only a bounded cache.
// Each id is owned by the log record that holds its item, known by its
// node and its receipt (unique per node): a payload's claim is made while
// the log writes it and committed only once the log holds it, and the
// flusher stores only the items its records own, settling the records
// whose claim it does not know (docs/exactly-once.md, "Shared dedup").
type IDRegistry interface {
	// Claim claims ids of an MCP for the record of node received at at,
	// and returns those that are the record's: the others were accepted
	// within the window by another record. It commits only once durable
	// yields nil (the log holds the payload), and returns durable's error
	// otherwise, having claimed nothing. Claims are idempotent: a record
	// keeps the ids it claimed before.
	Claim(ctx context.Context, node, mcpID string, ids []string, at time.Time, durable <-chan error) (own []string, err error)
	// Settle claims the ids of many records of node (idempotently) and
	// returns, for each, the ids it does not own.
	Settle(ctx context.Context, node string, recs []IDClaim) (lost [][]string, err error)
	// Expire deletes up to limit ids older than the window.
	Expire(ctx context.Context, now time.Time, limit int) (int, error)
}

// IDClaim is a log record's claim on its item ids (IDRegistry.Settle).
type IDClaim struct {
	Seq   uint64 // the record (the flusher's bookkeeping)
	MCPID string
	IDs   []string
	At    time.Time // the record's receipt: with the node, the ids' owner
}

// SessionAssigner gives the items sent without a session_id their derived
// session (SessionState; postgres.AutoSessions), in place, before they
// are written to the ingest log, so the log and every replay carry the
// same ids.
type SessionAssigner interface {
	AssignSessions(ctx context.Context, mcpID string, items []Item) error
}
