package analytics

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// retentionFake records what a pass asked of the stores.
type retentionFake struct {
	installation int
	applied      []RetentionStep
}

func (f *retentionFake) Retentions(_ context.Context, installation int) ([]AccountRetention, error) {
	f.installation = installation
	return []AccountRetention{{AccountID: "a", Days: 30, MCPIDs: []string{"m"}}, {AccountID: "b", Days: 60, MCPIDs: []string{"n"}}}, nil
}

func (f *retentionFake) PlanRetention(_ context.Context, installation int, accts []AccountRetention, today time.Time) ([]RetentionStep, error) {
	_, per := RetentionCutoffs(installation, accts, today)
	var steps []RetentionStep
	for id, before := range per {
		steps = append(steps, RetentionStep{Kind: "delete", AccountID: id, Before: before, MCPIDs: []string{"m"}, Rows: 3})
	}
	return steps, nil
}

func (f *retentionFake) ApplyRetention(_ context.Context, s RetentionStep) error {
	f.applied = append(f.applied, s)
	return nil
}

func TestRetentionRunner(t *testing.T) {
	today := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	held := false
	f := &retentionFake{}
	r := &RetentionRunner{Store: f, Accounts: f, InstallationDays: 60, Now: func() time.Time { return today },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Lock: func(ctx context.Context, fn func(context.Context) error) (bool, error) {
			if held {
				return false, nil
			}
			return true, fn(ctx)
		}}

	var out strings.Builder
	ran, err := r.Run(context.Background(), true, &out)
	if err != nil || !ran || len(f.applied) != 0 || f.installation != 60 {
		t.Fatalf("dry run: ran %v err %v applied %v installation %d", ran, err, f.applied, f.installation)
	}
	if want := "would delete account a (1 MCP) before 2026-10-27 (3 raw items)"; !strings.Contains(out.String(), "2 accounts; 1 step") ||
		!strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "dry run: nothing was changed") {
		t.Fatalf("dry run output %q lacks %q", out.String(), want)
	}

	out.Reset()
	if ran, err := r.Run(context.Background(), false, &out); err != nil || !ran || len(f.applied) != 1 ||
		f.applied[0].AccountID != "a" || !f.applied[0].Before.Equal(time.Date(2026, 10, 27, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("pass: ran %v err %v applied %+v", ran, err, f.applied)
	}

	held = true
	if ran, err := r.Run(context.Background(), false, nil); err != nil || ran || len(f.applied) != 1 {
		t.Fatalf("lock held elsewhere: ran %v err %v applied %d", ran, err, len(f.applied))
	}
}
