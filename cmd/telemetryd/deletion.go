package main

import (
	"context"
	"time"

	telemetry "github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/ingest"
)

// flushWait bounds how long a deletion waits for this instance's log to
// flush what it took before the request ran; past it (ClickHouse
// unreachable, a backlog) the request stays running and is tried again
// later.
const flushWait = 2 * time.Minute

// flushedDeleter runs a deletion only once this instance's write-ahead log
// has flushed every item it accepted before (and in the same second as)
// the deletion started: a mutation changes only the rows already stored,
// so a person's item still in the log would outlive the request.
// Other instances' logs are not waited for (docs/data-lifecycle.md,
// "Deleting a person's data").
type flushedDeleter struct {
	accounts.TelemetryDeleter
	pipeline *ingest.Pipeline
}

func (d flushedDeleter) flushed(ctx context.Context) error {
	if d.pipeline == nil {
		return nil
	}
	through := time.Now().Truncate(time.Second).Add(time.Second)
	wctx, cancel := context.WithTimeout(ctx, flushWait)
	defer cancel()
	if err := d.pipeline.WaitFlushed(wctx, through); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return telemetry.Errorf(telemetry.EUNAVAILABLE, "deletion: this instance's log has not flushed the items taken before the request within %s", flushWait)
	}
	return nil
}

func (d flushedDeleter) DeleteUserTelemetry(ctx context.Context, mcpID, userID string) error {
	if err := d.flushed(ctx); err != nil {
		return err
	}
	return d.TelemetryDeleter.DeleteUserTelemetry(ctx, mcpID, userID)
}

func (d flushedDeleter) DeleteMCPTelemetry(ctx context.Context, mcpID string) error {
	if err := d.flushed(ctx); err != nil {
		return err
	}
	return d.TelemetryDeleter.DeleteMCPTelemetry(ctx, mcpID)
}
