package accounts

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpscope/telemetry"
)

// Deletion kinds and statuses.
const (
	DeletionUser = "user" // one person's items of an MCP
	DeletionMCP  = "mcp"  // every item of a deleted MCP

	DeletionPending = "pending"
	DeletionRunning = "running"
	DeletionDone    = "done"
	DeletionFailed  = "failed"
)

// DefaultDeletionsPerHour is how many deletion requests (of a person's
// data, or deleting an MCP) an account may make per hour by default
// (storage.deletions_per_hour): each runs mutations that rewrite parts of
// every table holding the MCP's rows, for every tenant's data stored
// beside it.
const DefaultDeletionsPerHour = 60

// Deletion is a request to delete telemetry, carried out in the
// background: DELETE /v1/mcps/{id}/users/{user_id} makes one of kind
// user, deleting an MCP one of kind mcp.
type Deletion struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"-"`
	Kind       string     `json:"kind"`
	MCPID      string     `json:"mcp_id"`
	UserID     *string    `json:"user_id"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// DeletionService records deletion requests and hands them to the worker.
type DeletionService interface {
	// RequestUserDeletion records the deletion of one person's items of
	// the account's MCP. Errors: ENOTFOUND for another account's or a
	// missing MCP; EINVALID for an empty or over-long user id;
	// ERATELIMITED when the account made its hourly number of deletion
	// requests (both kinds count; deleting an MCP is refused the same way).
	RequestUserDeletion(ctx context.Context, accountID, mcpID, userID string) (*Deletion, error)
	// FindDeletion returns one of the account's requests. Errors: ENOTFOUND.
	FindDeletion(ctx context.Context, accountID, id string) (*Deletion, error)
	// ClaimDeletion marks the oldest pending request (or a running one
	// whose worker seems gone) running and returns it; nil when there is
	// none. Instances never claim the same request at once.
	ClaimDeletion(ctx context.Context) (*Deletion, error)
	// FinishDeletion records the outcome: done, or failed with cause
	// (kept for operators, never shown to clients).
	FinishDeletion(ctx context.Context, id string, cause error) error
}

// TelemetryDeleter deletes stored telemetry (the metrics store).
type TelemetryDeleter interface {
	// DeleteUserTelemetry deletes the MCP's raw items whose user_id is
	// userID, and what rollups keep per user; it returns once they are
	// gone.
	DeleteUserTelemetry(ctx context.Context, mcpID, userID string) error
	// DeleteMCPTelemetry deletes every raw item and rollup row of the MCP
	// (usage counts excepted); it returns once they are gone.
	DeleteMCPTelemetry(ctx context.Context, mcpID string) error
}

// DeletionPass carries out every pending deletion request, one after the
// other, for a background job (cmd/telemetryd runs it at start, then
// every storage.deletion_poll). A request whose store is unavailable stays
// running and is claimed again once stale; one that fails otherwise is
// marked failed (an operator reads the log). The pass fails only when no
// request can be claimed (PostgreSQL down).
func DeletionPass(svc DeletionService, del TelemetryDeleter, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		for ctx.Err() == nil {
			d, err := svc.ClaimDeletion(ctx)
			if err != nil {
				return fmt.Errorf("deletions: could not claim a request: %w", err)
			}
			if d == nil {
				return nil
			}
			RunDeletion(ctx, svc, del, d, log)
		}
		return nil
	}
}

// RunDeletion carries out one claimed request and records its outcome.
func RunDeletion(ctx context.Context, svc DeletionService, del TelemetryDeleter, d *Deletion, log *slog.Logger) {
	start := time.Now()
	var err error
	switch d.Kind {
	case DeletionUser:
		if d.UserID != nil {
			err = del.DeleteUserTelemetry(ctx, d.MCPID, *d.UserID)
		}
	case DeletionMCP:
		err = del.DeleteMCPTelemetry(ctx, d.MCPID)
	}
	if ctx.Err() != nil {
		return // shutting down: the request stays running and is claimed again later
	}
	if telemetry.ErrorCode(err) == telemetry.EUNAVAILABLE {
		// The store is down or busy: the request stays running, and is
		// claimed again once it counts as stale (mutations are idempotent).
		log.Warn("deletions: the metrics store is unavailable; retrying later", "deletion", d.ID, "error", err)
		return
	}
	if err != nil {
		log.Error("deletions: failed", "deletion", d.ID, "kind", d.Kind, "mcp", d.MCPID, "error", err)
	} else {
		log.Info("deletions: done", "deletion", d.ID, "kind", d.Kind, "mcp", d.MCPID, "duration", time.Since(start))
	}
	finishDeletion(ctx, svc, d.ID, err, log)
}

// finishRetryFirst and finishRetryFor are finishDeletion's first wait and
// how long it retries in all while PostgreSQL is unavailable (vars, so
// that tests can shorten them).
var finishRetryFirst, finishRetryFor = time.Second, 2 * time.Minute

// finishDeletion records a request's outcome. The work is done (or failed)
// by now, so an outcome lost to a PostgreSQL outage would leave the request
// running until it counts as stale (30 minutes) and is done again: while
// PostgreSQL answers "unavailable", it retries (1 s, doubling to 8 s, for
// at most finishRetryFor). The pass can claim nothing meanwhile anyway.
func finishDeletion(ctx context.Context, svc DeletionService, id string, cause error, log *slog.Logger) {
	wait, deadline := finishRetryFirst, time.Now().Add(finishRetryFor)
	for {
		ferr := svc.FinishDeletion(context.WithoutCancel(ctx), id, cause)
		if ferr == nil {
			return
		}
		if telemetry.ErrorCode(ferr) != telemetry.EUNAVAILABLE || time.Now().Add(wait).After(deadline) {
			log.Warn("deletions: could not record the outcome; the request runs again once stale", "deletion", id, "error", ferr)
			return
		}
		log.Warn("deletions: could not record the outcome; retrying", "deletion", id, "error", ferr, "retry_in", wait)
		select {
		case <-ctx.Done():
			return // shutting down: the request is claimed again once stale
		case <-time.After(wait):
		}
		wait = min(2*wait, 8*finishRetryFirst)
	}
}
