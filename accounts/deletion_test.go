package accounts

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
)

// finishFails is a DeletionService whose FinishDeletion fails with errs,
// one per call, before it succeeds.
type finishFails struct {
	DeletionService
	errs     []error
	calls    int
	finished error
}

func (f *finishFails) FinishDeletion(_ context.Context, _ string, cause error) error {
	f.calls++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return err
	}
	f.finished = cause
	return nil
}

type noopDeleter struct{}

func (noopDeleter) DeleteUserTelemetry(context.Context, string, string) error { return nil }
func (noopDeleter) DeleteMCPTelemetry(context.Context, string) error          { return nil }

// An outcome that PostgreSQL could not record because it was down is
// recorded once it is back, instead of leaving the request running until
// it counts as stale; other errors are not retried.
func TestRunDeletionRecordsTheOutcomeAcrossAnOutage(t *testing.T) {
	first, total := finishRetryFirst, finishRetryFor
	finishRetryFirst, finishRetryFor = time.Millisecond, time.Minute
	t.Cleanup(func() { finishRetryFirst, finishRetryFor = first, total })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	down := &telemetry.Error{Code: telemetry.EUNAVAILABLE, Err: errors.New("connection refused")}
	d := &Deletion{ID: "del_1", Kind: DeletionMCP, MCPID: "mcp_1"}

	svc := &finishFails{errs: []error{down, down, down}}
	RunDeletion(context.Background(), svc, noopDeleter{}, d, log)
	if svc.calls != 4 || svc.finished != nil {
		t.Errorf("after three unavailable answers: %d calls, outcome %v; want 4 calls recording success", svc.calls, svc.finished)
	}

	svc = &finishFails{errs: []error{errors.New("constraint violated")}}
	RunDeletion(context.Background(), svc, noopDeleter{}, d, log)
	if svc.calls != 1 {
		t.Errorf("a non-outage error was tried %d times, want once", svc.calls)
	}

	finishRetryFor = 20 * time.Millisecond
	svc = &finishFails{errs: []error{down, down, down, down, down, down, down, down, down, down, down, down}}
	RunDeletion(context.Background(), svc, noopDeleter{}, d, log)
	if svc.calls < 2 || svc.calls > 8 || svc.finished != nil {
		t.Errorf("an outage longer than the bound: %d calls; want a few, then giving up", svc.calls)
	}
}
