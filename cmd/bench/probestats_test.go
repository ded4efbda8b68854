package main

import (
	"fmt"
	"math"
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
	// a: 60, 60 (the first counts its predecessor before the window);
	// b: 62 (134 is after the window); c: 0.7, 59.2.
	if iv.n != 5 || iv.shortest != 700*time.Millisecond || iv.longest != 62*time.Second || iv.p50 != 60*time.Second || iv.p99 != 62*time.Second {
		t.Fatalf("intervals: %+v", iv)
	}
	if (checkIntervals(nil, from, at(1)) != intervalStats{}) || statsOfBins(nil).bins != 0 {
		t.Fatal("empty input")
	}
}
