package probe_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/probe"
)

// TestNextRun: a probe runs at its own phase within the interval, exactly
// one interval apart in steady state whatever the poll's lag and the
// check's length, never within half an interval of its last start,
// never in the past; probes created in one burst (1,000 in 4 s, as
// make bench creates them) spread over the whole interval.
func TestNextRun(t *testing.T) {
	const every = time.Minute
	base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	first := probe.NextRun("prb_steady", base, base.Add(20*time.Millisecond), every)
	if d := first.Sub(base); d < every/2 || d >= every*3/2 {
		t.Fatalf("first next run %s after the start, want within [30 s, 90 s)", d)
	}
	// Claimed 900 ms late (the poll), 4 s long: still one interval on.
	next := probe.NextRun("prb_steady", first.Add(900*time.Millisecond), first.Add(5*time.Second), every)
	if next.Sub(first) != every {
		t.Fatalf("steady: %s between due times, want %s", next.Sub(first), every)
	}
	// Every instance was down for 10 minutes: once, at its phase, within
	// the next interval (not once per missed interval, not now).
	now := first.Add(10*time.Minute + 7*time.Second)
	late := probe.NextRun("prb_steady", first, now, every)
	if late.Before(now) || late.Sub(now) >= every || late.Sub(first)%every != 0 {
		t.Fatalf("overdue: next %s, now %s, phase of %s", late, now, first)
	}
	// A check that started just before its phase (a lagging poll of the
	// previous slot) does not run again within half an interval.
	if n := probe.NextRun("prb_steady", next.Add(-time.Millisecond), next, every); n.Sub(next) < every/2 {
		t.Fatalf("ran again %s after a check", n.Sub(next))
	}
	if got := probe.NextRun("prb_x", base, base, 0); !got.Equal(base) {
		t.Fatalf("no interval: %s", got)
	}

	// 1,000 probes whose first checks started within 4 s: their next runs
	// fall over the whole minute, about as evenly as random offsets
	// would (mean 16.7 a second), and each probe keeps its phase.
	perSecond := make([]int, 60)
	for i := range 1000 {
		id := fmt.Sprintf("prb_%016x", uint64(i)*0x9e3779b97f4a7c15)
		started := base.Add(time.Duration(i) * 4 * time.Millisecond)
		n1 := probe.NextRun(id, started, started.Add(10*time.Millisecond), every)
		if d := n1.Sub(started); d < every/2 || d >= every*3/2 {
			t.Fatalf("%s: next run %s after its start", id, d)
		}
		n2 := probe.NextRun(id, n1.Add(300*time.Millisecond), n1.Add(time.Second), every)
		if n2.Sub(n1) != every {
			t.Fatalf("%s: %s between runs", id, n2.Sub(n1))
		}
		perSecond[n1.Sub(base)%every/time.Second]++
	}
	lo, hi := 1000, 0
	for _, c := range perSecond {
		lo, hi = min(lo, c), max(hi, c)
	}
	if hi > 40 || lo < 4 {
		t.Fatalf("checks per second of the minute from %d to %d (mean 16.7): %v", lo, hi, perSecond)
	}
	t.Logf("checks per second of the minute: min %d, max %d", lo, hi)
}
