package alerting

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// batchReader is a fakeReader that also takes concurrent batches, as the
// ClickHouse store does, counting the reads in flight.
type batchReader struct {
	fakeReader
	inFlight, most atomic.Int32
}

func (b *batchReader) WindowSets(_ context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
	}
	time.Sleep(20 * time.Millisecond)
	return b.sets(to, reqs)
}

func (b *batchReader) WindowSetsBatch(ctx context.Context, reads []analytics.WindowRead) ([]map[string]map[int]map[string]analytics.WindowStat, error) {
	out := make([]map[string]map[int]map[string]analytics.WindowStat, len(reads))
	for i, r := range reads {
		var err error
		if out[i], err = b.WindowSets(ctx, r.To, r.Reqs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// With a reader that takes concurrent reads, a pass reads up to ReadAhead
// chunks at once: every rule is measured and applied once, a failed
// chunk's rules are left alone, and a pass out of its budget defers the
// chunks it has not started.
func TestPassReadsChunksAhead(t *testing.T) {
	var rules []EvalRule
	for a := 0; a < 12; a++ {
		r := evalRule(fmt.Sprintf("r%02d", a), fmt.Sprintf("m%02d", a), StateOK, 5, MetricErrors, CompGT, 0)
		r.AccountID = fmt.Sprintf("acc-%02d", a)
		rules = append(rules, r)
	}
	reader := &batchReader{}
	var mu sync.Mutex
	fired := map[string]int{}
	store := &fakeStore{t: t,
		enabled: func() ([]EvalRule, error) { return rules, nil },
		fire: func(r EvalRule, _ time.Time, _ FanOut) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			fired[r.ID]++
			return true, nil
		},
	}
	// Every window has 1 error > 0: each rule but the unreadable one fires.
	reader.sets = func(to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.WindowStat, error) {
		if _, ok := reqs["m03"]; ok {
			return nil, errors.New("clickhouse: unavailable")
		}
		stats := map[string]map[string]analytics.WindowStat{}
		for mcp := range reqs {
			stats[mcp] = map[string]analytics.WindowStat{"": {Calls: 1, Errors: 1}}
		}
		return sameStats(stats)(to, reqs)
	}
	ev := NewRuleEvaluator(store, reader, 2)
	ev.ChunkRules = 1
	ev.ReadAhead = 3
	sum, err := ev.EvaluateAll(context.Background(), evalNow)
	if err == nil || sum.Rules != 12 || sum.Fired != 11 || sum.Failed != 1 || sum.Deferred != 0 {
		t.Fatalf("summary %+v, error %v", sum, err)
	}
	if len(fired) != 11 || fired["r03"] != 0 {
		t.Errorf("fired %v", fired)
	}
	for id, n := range fired {
		if n != 1 {
			t.Errorf("%s fired %d times", id, n)
		}
	}
	if m := reader.most.Load(); m < 2 || m > 3 {
		t.Errorf("%d reads at once, want 2 to ReadAhead (3)", m)
	}

	// Out of budget after the first reads: the chunks started are
	// finished, the others deferred to the next pass.
	for i := range rules {
		rules[i].State = StateFiring // keeps firing: nothing to apply
	}
	ev.Budget = time.Millisecond
	sum, err = ev.EvaluateAll(context.Background(), evalNow)
	if sum.Deferred < 12-3 || sum.Deferred > 12-1 || sum.Rules != 12 {
		t.Fatalf("budgeted pass: %+v %v", sum, err)
	}
}
