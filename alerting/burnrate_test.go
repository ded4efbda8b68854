package alerting

import (
	"math"
	"testing"
	"time"
)

// The Workbook's table 5-8 figures for a 99.9% objective over 30 days: a
// burn rate of 14.4 spends 2% of the budget in one hour, 6 spends 5% in six
// hours, 1 spends 10% in three days.
func TestBurnRateWorkbookTable(t *testing.T) {
	const objective = 0.999
	window := 30 * 24 * time.Hour
	cases := []struct {
		rate     float64
		over     time.Duration
		consumed float64
	}{
		{14.4, time.Hour, 0.02},
		{6, 6 * time.Hour, 0.05},
		{1, 72 * time.Hour, 0.10},
	}
	for _, c := range cases {
		// consumed = rate × over / window
		got := c.rate * float64(c.over) / float64(window)
		if math.Abs(got-c.consumed) > 1e-9 {
			t.Errorf("rate %v over %v consumes %v of the budget, want %v", c.rate, c.over, got, c.consumed)
		}
		// The bad fraction at that rate, turned back into a burn rate.
		bad := int64(math.Round(c.rate * (1 - objective) * 1e6))
		if r := BurnRate(Events{Total: 1e6, Bad: bad}, objective); math.Abs(r-c.rate) > 1e-6 {
			t.Errorf("BurnRate of %d bad in 1e6 = %v, want %v", bad, r, c.rate)
		}
	}
}

func TestBurnRateEdges(t *testing.T) {
	if r := BurnRate(Events{}, 0.995); r != 0 {
		t.Errorf("no events burn %v, want 0", r)
	}
	if r := BurnRate(Events{Total: 10, Bad: 10}, 1); r != 0 {
		t.Errorf("objective 1 burns %v, want 0 (no budget to divide by)", r)
	}
	// 99.5%: a budget of 0.5%; 5% bad burns it ten times too fast.
	if r := BurnRate(Events{Total: 1000, Bad: 50}, 0.995); math.Abs(r-10) > 1e-9 {
		t.Errorf("5%% bad at 99.5%% burns %v, want 10", r)
	}
}

func TestBurnState(t *testing.T) {
	cases := []struct {
		name  string
		rates map[string]float64
		want  string
		long  string
	}{
		{"quiet", map[string]float64{}, SLOStateOK, ""},
		{"fast burn", map[string]float64{Burn5m: 20, Burn30m: 20, Burn1h: 15, Burn6h: 3, Burn3d: 0.5}, SLOStatePage, Burn1h},
		{"fast burn already over", map[string]float64{Burn5m: 0, Burn30m: 2, Burn1h: 15, Burn6h: 3, Burn3d: 0.5}, SLOStateOK, ""},
		{"six-hour burn", map[string]float64{Burn5m: 7, Burn30m: 7, Burn1h: 7, Burn6h: 6.5, Burn3d: 1.2}, SLOStatePage, Burn6h},
		{"slow burn", map[string]float64{Burn5m: 2, Burn30m: 2, Burn1h: 2, Burn6h: 1.5, Burn3d: 1.1}, SLOStateTicket, Burn3d},
		{"exactly at factor does not fire", map[string]float64{Burn5m: 14.4, Burn1h: 14.4, Burn30m: 6, Burn6h: 6, Burn3d: 1}, SLOStateOK, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := BurnState(c.rates)
			if got != c.want {
				t.Fatalf("state %q, want %q", got, c.want)
			}
			if c.long == "" && why != nil || c.long != "" && (why == nil || why.Long != c.long) {
				t.Fatalf("decided by %+v, want long window %q", why, c.long)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	// 99.5% of 100,000 calls: 500 may fail; 100 did, 80% is left.
	b := Budget(Events{Total: 100_000, Bad: 100}, 0.995)
	if math.Abs(b.Total-500) > 1e-6 || b.Spent != 100 || math.Abs(b.Remaining-0.8) > 1e-9 {
		t.Fatalf("budget %+v, want total 500, spent 100, remaining 0.8", b)
	}
	if b := Budget(Events{}, 0.995); b.Remaining != 1 {
		t.Fatalf("empty window's budget %+v, want remaining 1", b)
	}
	if b := Budget(Events{Total: 100, Bad: 2}, 0.995); b.Remaining >= 0 {
		t.Fatalf("overspent budget %+v, want remaining below 0", b)
	}
	// 80% left at a burn rate of 14.4 over 28 days: 0.8 × 28 d / 14.4.
	d, ok := BudgetLasts(0.8, 14.4, 28*24*time.Hour)
	want := time.Duration(0.8 / 14.4 * float64(28*24*time.Hour))
	if !ok || d != want {
		t.Fatalf("lasts %v (%v), want %v", d, ok, want)
	}
	if _, ok := BudgetLasts(0.8, 0, time.Hour); ok {
		t.Fatal("a budget that is not burning lasts indefinitely")
	}
	if d, ok := BudgetLasts(-0.1, 2, time.Hour); !ok || d != 0 {
		t.Fatalf("a spent budget lasts %v, want 0", d)
	}
}

// A synthetic month: a fast burn pages within minutes, a slow burn tickets
// without paging, and noise within the objective does neither. Each minute
// has 100 calls; the windows are summed from the per-minute bad counts.
func TestBurnStateOverSyntheticTraffic(t *testing.T) {
	const objective = 0.995 // 0.5% budget: 0.5 bad calls a minute on budget
	const perMinute = 100
	month := 28 * 24 * 60
	badAt := func(kind string) func(m int) int64 {
		return func(m int) int64 {
			// Noise: one bad call every 400 minutes' calls on average,
			// spread deterministically (0.25 per minute, half the budget).
			noise := int64(0)
			if m%4 == 0 {
				noise = 1
			}
			start := month - 6*60
			switch {
			case kind == "fast" && m >= month-30:
				return 20 // 20% bad: burn rate 40
			case kind == "slow" && m >= start-3*24*60:
				return 1 + noise // 1.25%: burn rate 2.5
			}
			return noise
		}
	}
	windowsAt := func(bad func(int) int64, end int) map[string]Events {
		out := map[string]Events{}
		for _, w := range BurnWindows {
			n := int(w.Length / time.Minute)
			var ev Events
			for m := end - n; m < end; m++ {
				ev.Total += perMinute
				ev.Bad += bad(m)
			}
			out[w.Key] = ev
		}
		return out
	}
	// Fast burn: 20% bad (a burn rate of 40) from 30 minutes before the
	// end. The Workbook's detection time is factor / rate × long window:
	// 14.4 / 40 × 60 min = 21.6 min, so the page comes at minute 22.
	fast := badAt("fast")
	paged := -1
	for end := month - 30; end <= month; end++ {
		if s, _ := BurnState(BurnRates(windowsAt(fast, end), objective)); s == SLOStatePage {
			paged = end - (month - 30)
			break
		}
	}
	if want := int(math.Ceil(14.4 / 40 * 60)); paged != want {
		t.Fatalf("fast burn paged after %d minutes, want %d (the Workbook's detection time)", paged, want)
	}
	// Slow burn: tickets at the end, never pages.
	slow := badAt("slow")
	for end := month - 6*60; end <= month; end += 15 {
		if s, _ := BurnState(BurnRates(windowsAt(slow, end), objective)); s == SLOStatePage {
			t.Fatalf("slow burn paged at minute %d", end)
		}
	}
	if s, _ := BurnState(BurnRates(windowsAt(slow, month), objective)); s != SLOStateTicket {
		t.Fatalf("slow burn's state %q, want ticket", s)
	}
	// Noise alone: neither, at any point of the last three days.
	noise := badAt("noise")
	for end := month - 3*24*60; end <= month; end += 15 {
		if s, _ := BurnState(BurnRates(windowsAt(noise, end), objective)); s != SLOStateOK {
			t.Fatalf("noise gave %q at minute %d", s, end)
		}
	}
}
