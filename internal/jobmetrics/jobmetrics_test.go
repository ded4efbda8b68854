package jobmetrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/jobs"
)

// fakeEvaluator counts passes; it stands in for the database-backed one
// to test the loop's own logic (ticks, metrics, stopping).
type fakeEvaluator struct {
	mu     sync.Mutex
	passes int
	pass   func(n int) (alerting.PassSummary, error)
}

func (f *fakeEvaluator) EvaluateRule(context.Context, string, string, time.Time) (alerting.Evaluation, error) {
	return alerting.Evaluation{}, nil
}

func (f *fakeEvaluator) EvaluateAll(context.Context, time.Time) (alerting.PassSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passes++
	return f.pass(f.passes)
}

func TestEvaluatorLoopRecordsPassesAndStops(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics := NewEvaluator(reg)
	ctx, cancel := context.WithCancel(context.Background())
	ev := &fakeEvaluator{pass: func(n int) (alerting.PassSummary, error) {
		switch n {
		case 1:
			return alerting.PassSummary{Rules: 3, Fired: 2}, nil
		case 2:
			return alerting.PassSummary{Rules: 3, Resolved: 1, Failed: 1}, errors.New("window of 5 minutes: unavailable")
		case 3:
			return alerting.PassSummary{Skipped: true}, nil
		}
		cancel()
		return alerting.PassSummary{}, nil
	}}
	done := make(chan error, 1)
	perJob := NewJobs(reg)
	go func() {
		done <- jobs.Run(ctx, jobs.Job{Name: "evaluator", Every: time.Millisecond, Timeout: alerting.PassTimeout(time.Millisecond),
			Pass: alerting.EvaluationPass(ev, quietLogger(), metrics), Log: quietLogger(), Observer: perJob})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the loop did not stop")
	}
	if got := counterValue(metrics.firings); got != 2 {
		t.Errorf("firings %v", got)
	}
	if got := counterValue(metrics.resolved); got != 1 {
		t.Errorf("resolutions %v", got)
	}
	for outcome, want := range map[string]float64{"ok": 2, "failed": 1, "skipped": 1} {
		if got := counterValue(metrics.passes.WithLabelValues(outcome)); got != want {
			t.Errorf("%s passes %v, want %v", outcome, got, want)
		}
	}
	// The job's own record: the pass cancelled by stopping is not one.
	for outcome, want := range map[string]float64{"ok": 2, "failed": 1} {
		if got := counterValue(perJob.runs.WithLabelValues("evaluator", outcome)); got != want {
			t.Errorf("job runs %s %v, want %v", outcome, got, want)
		}
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
