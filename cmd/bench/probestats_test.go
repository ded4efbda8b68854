package main

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestProbeSpread(t *testing.T) {
	from := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return from.Add(time.Duration(s * float64(time.Second))) }
	// Three probes over two minutes at 60 s: a steady one, one drifting
	// by 2 s a run, one checked twice in a burst; one check before the
	// window, one after it.
	checks := []probeCheck{
		{probe: "a", at: at(-59.5)}, {probe: "a", at: at(0.5)}, {probe: "a", at: at(60.5)},
		{probe: "b", at: at(10)}, {probe: "b", at: at(72)}, {probe: "b", at: at(134)},
		{probe: "c", at: at(10.2)}, {probe: "c", at: at(10.9)}, {probe: "c", at: at(70.1)},
	}
	counts := perSecond(checks, from, 120)
	if counts[0] != 1 || counts[10] != 3 || counts[60] != 1 || counts[70] != 1 || counts[72] != 1 || counts[119] != 0 {
		t.Fatalf("per second: %v", counts)
	}
	s := statsOfBins(counts)
	// 7 checks in 120 s; the busiest second holds 3, most none.
	if s.bins != 120 || math.Abs(s.mean-7.0/120) > 1e-9 || s.max != 3 || s.min != 0 || s.p99 != 1 {
		t.Fatalf("stats: %+v", s)
	}
	// Population standard deviation of 4 ones, one 3 and 115 zeros.
	sd := math.Sqrt((4*math.Pow(1-s.mean, 2) + math.Pow(3-s.mean, 2) + 115*math.Pow(s.mean, 2)) / 120)
	if math.Abs(s.cv-sd/s.mean) > 1e-9 {
		t.Fatalf("cv %v, want %v", s.cv, sd/s.mean)
	}
	// Folded on the minute: seconds 0 (0.5), 10 (three of them, 10.x
	// and 70.1), 12 (72).
	ph := phases(checks, from, at(120), time.Minute)
	if len(ph) != 60 || ph[0] != 2 || ph[10] != 4 || ph[12] != 1 || fmt.Sprint(statsOfBins(ph).max) != "4" {
		t.Fatalf("phases: %v", ph)
	}
	iv := checkIntervals(checks, from, at(120))
	// Not from a probe's first check to its second (a: -59.5 to 0.5, b:
	// 10 to 72, c: 10.2 to 10.9); a: 60 (its predecessor is before the
	// window); b: none (134 is after the window); c: 59.2.
	if iv.n != 2 || iv.shortest != 59200*time.Millisecond || iv.longest != 60*time.Second || iv.p50 != 59200*time.Millisecond || iv.p99 != 60*time.Second {
		t.Fatalf("intervals: %+v", iv)
	}
	// c's first check (10.2) is the last of the first checks.
	if got := lastFirstCheck(checks); !got.Equal(at(10.2)) {
		t.Fatalf("last first check at %s", got.Sub(from))
	}
	if (checkIntervals(nil, from, at(1)) != intervalStats{}) || statsOfBins(nil).bins != 0 {
		t.Fatal("empty input")
	}
}

// TestProbeSummary: the summary's probe goals follow the figures: checks
// within 1% of those expected, the busiest second within 3x the mean,
// the time between checks within 1 s of the interval.
func TestProbeSummary(t *testing.T) {
	figs := func(checks, perSecondMax, intervalP99 float64) []figure {
		f := func(m string, v float64) figure { return figure{"probes", "probes", m, v} }
		return []figure{f("probes", 1000), f("interval_s", 60), f("window_s", 180), f("checks", checks), f("expected", 3000),
			f("per_second_mean", 16.7), f("per_second_max", perSecondMax), f("interval_p50_s", 60), f("interval_p99_s", intervalP99)}
	}
	for _, c := range []struct {
		checks, top, p99 float64
		want             []string
	}{
		{2999, 30, 60.9, []string{`checks done / expected\s+2999 / 3000 \(100\.0%\)\s+99-101% .* ok`, `mean / p99 / max\s+16\.7 / 0 / 30 .* ok`, `p99 within 60 ± 1 s\s+ok`}},
		{3105, 61, 67, []string{`3105 / 3000 \(103\.5%\) .* MISSED`, `16\.7 / 0 / 61 .* MISSED`, `p99 within 60 ± 1 s\s+MISSED`}},
	} {
		var out strings.Builder
		summary{figs: figs(c.checks, c.top, c.p99), out: &out}.probes()
		for _, w := range c.want {
			if !regexp.MustCompile(w).MatchString(out.String()) {
				t.Errorf("summary lacks %s:\n%s", w, out.String())
			}
		}
	}
	var none strings.Builder
	summary{out: &none}.probes()
	if none.Len() != 0 {
		t.Errorf("no probe figures, yet: %q", none.String())
	}
}
