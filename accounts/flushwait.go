package accounts

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// DefaultFlushWait bounds how long a deletion waits for this instance's
// log to flush what it took before the request ran; past it (the metrics
// store unreachable, a backlog) the request stays running and is tried
// again later.
const DefaultFlushWait = 2 * time.Minute

// FlushWaiter is this instance's ingest log (ingest.Pipeline).
type FlushWaiter interface {
	// WaitFlushed returns once every item taken at or before through is
	// stored, or when ctx ends (its error).
	WaitFlushed(ctx context.Context, through time.Time) error
}

// FlushedDeleter runs a deletion only once this instance's write-ahead
// log has flushed every item it accepted before (and in the same second
// as) the deletion started: a mutation changes only the rows already
// stored, so a person's item still in the log would outlive the request.
// Other instances' logs are not waited for (docs/data-lifecycle.md,
// "Deleting a person's data").
type FlushedDeleter struct {
	TelemetryDeleter
	// Log is this instance's log; nil waits for nothing.
	Log FlushWaiter
	// Wait bounds the wait (0: DefaultFlushWait); past it the deletion
	// fails with EUNAVAILABLE, so the request is tried again later.
	Wait time.Duration
}

func (d FlushedDeleter) flushed(ctx context.Context) error {
	if d.Log == nil {
		return nil
	}
	wait := d.Wait
	if wait <= 0 {
		wait = DefaultFlushWait
	}
	through := time.Now().Truncate(time.Second).Add(time.Second)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := d.Log.WaitFlushed(wctx, through); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return telemetry.Errorf(telemetry.EUNAVAILABLE, "deletion: this instance's log has not flushed the items taken before the request within %s", wait)
	}
	return nil
}

// DeleteUserTelemetry waits for the log, then deletes.
func (d FlushedDeleter) DeleteUserTelemetry(ctx context.Context, mcpID, userID string) error {
	if err := d.flushed(ctx); err != nil {
		return err
	}
	return d.TelemetryDeleter.DeleteUserTelemetry(ctx, mcpID, userID)
}

// DeleteMCPTelemetry waits for the log, then deletes.
func (d FlushedDeleter) DeleteMCPTelemetry(ctx context.Context, mcpID string) error {
	if err := d.flushed(ctx); err != nil {
		return err
	}
	return d.TelemetryDeleter.DeleteMCPTelemetry(ctx, mcpID)
}
