package accounts

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
)

// logFake is a log that has flushed up to flushedThrough.
type logFake struct{ flushedThrough time.Time }

func (l logFake) WaitFlushed(ctx context.Context, through time.Time) error {
	if !through.After(l.flushedThrough) {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

type deleterFake struct{ users, mcps int }

func (d *deleterFake) DeleteUserTelemetry(context.Context, string, string) error {
	d.users++
	return nil
}
func (d *deleterFake) DeleteMCPTelemetry(context.Context, string) error { d.mcps++; return nil }

func TestFlushedDeleterWaitsForTheLog(t *testing.T) {
	del := &deleterFake{}
	// A log that has flushed everything deletes at once.
	done := FlushedDeleter{TelemetryDeleter: del, Log: logFake{time.Now().Add(time.Hour)}, Wait: time.Second}
	if err := done.DeleteUserTelemetry(context.Background(), "m", "u"); err != nil || del.users != 1 {
		t.Fatalf("flushed log: err %v, deletions %d", err, del.users)
	}
	// A log holding items taken before the request: no deletion, and the
	// request is retried later (EUNAVAILABLE).
	behind := FlushedDeleter{TelemetryDeleter: del, Log: logFake{time.Now().Add(-time.Hour)}, Wait: 20 * time.Millisecond}
	if err := behind.DeleteMCPTelemetry(context.Background(), "m"); telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE || del.mcps != 0 {
		t.Fatalf("log behind: err %v, deletions %d", err, del.mcps)
	}
	// Shutting down is the context's error, not a failure to record.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := behind.DeleteUserTelemetry(ctx, "m", "u"); err != context.Canceled || del.users != 1 {
		t.Fatalf("cancelled: err %v, deletions %d", err, del.users)
	}
}
