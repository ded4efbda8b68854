package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
)

// A node id is held by one instance at a time; a second one waits for it
// (a predecessor going away) and is refused when the wait is over.
func TestHoldNodeID(t *testing.T) {
	t.Parallel()
	a, b := testDB(t), testDB(t)
	ctx := context.Background()
	release, err := a.HoldNodeID(ctx, "node-x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.HoldNodeID(ctx, "node-x", 0); telemetry.ErrorCode(err) != telemetry.ECONFLICT {
		t.Fatalf("second holder: %v, want a conflict", err)
	}
	other, err := b.HoldNodeID(ctx, "node-y", 0)
	if err != nil {
		t.Fatalf("another id: %v", err)
	}
	other()

	// The holder goes away while the second one waits.
	go func() {
		time.Sleep(300 * time.Millisecond)
		release()
	}()
	release2, err := b.HoldNodeID(ctx, "node-x", time.Minute)
	if err != nil {
		t.Fatalf("waiting for the id: %v", err)
	}
	release2()
}
