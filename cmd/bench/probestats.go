package main

import (
	"math"
	"sort"
	"time"
)

// probeCheck is one check as the service stored it (probe_results).
type probeCheck struct {
	probe   string
	at      time.Time // when the check started
	up      bool
	latency time.Duration
	kind    string // error kind, "" when up
}

// binStats summarises counts per bin (checks per second): mean, min, max,
// the 99th percentile bin and the coefficient of variation (standard
// deviation over mean).
type binStats struct {
	bins               int
	mean, min, max, cv float64
	p99                float64
}

func statsOfBins(counts []int) binStats {
	s := binStats{bins: len(counts)}
	if len(counts) == 0 {
		return s
	}
	sorted := append([]int(nil), counts...)
	sort.Ints(sorted)
	sum := 0
	for _, c := range counts {
		sum += c
	}
	s.mean = float64(sum) / float64(len(counts))
	s.min, s.max = float64(sorted[0]), float64(sorted[len(sorted)-1])
	rank := int(math.Ceil(0.99 * float64(len(sorted))))
	s.p99 = float64(sorted[min(max(rank, 1), len(sorted))-1])
	var ss float64
	for _, c := range counts {
		d := float64(c) - s.mean
		ss += d * d
	}
	if s.mean > 0 {
		s.cv = math.Sqrt(ss/float64(len(counts))) / s.mean
	}
	return s
}

// perSecond counts the checks that started in each whole second of
// [from, from+n s): how the load falls over the window.
func perSecond(checks []probeCheck, from time.Time, n int) []int {
	counts := make([]int, n)
	for _, c := range checks {
		if i := int(c.at.Sub(from) / time.Second); c.at.Compare(from) >= 0 && i < n {
			counts[i]++
		}
	}
	return counts
}

// phases counts the checks of [from, to) by their start's offset within
// the interval, in whole seconds (folded over the window: the shape of
// the schedule, without the noise of one minute).
func phases(checks []probeCheck, from, to time.Time, interval time.Duration) []int {
	n := max(int(interval/time.Second), 1)
	counts := make([]int, n)
	for _, c := range checks {
		if c.at.Before(from) || !c.at.Before(to) {
			continue
		}
		off := c.at.Sub(from) % (time.Duration(n) * time.Second)
		counts[int(off/time.Second)]++
	}
	return counts
}

// intervalStats are the times between consecutive checks of one probe.
type intervalStats struct {
	n                           int
	shortest, p50, p99, longest time.Duration
}

// checkIntervals measures, per probe, the time between each check that
// started in [from, to) and the probe's check before it (which may be
// earlier than from), except the time between a probe's first check and
// its second: the first runs within seconds of the probe's creation, the
// second at the probe's phase, 0.5 to 1.5 intervals later
// (probe.NextRun), which is no interval of the schedule. checks hold
// every check of the probes since they were created, in any order.
func checkIntervals(checks []probeCheck, from, to time.Time) intervalStats {
	byProbe := map[string][]time.Time{}
	for _, c := range checks {
		byProbe[c.probe] = append(byProbe[c.probe], c.at)
	}
	var ds []time.Duration
	for _, ats := range byProbe {
		sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
		for i := 2; i < len(ats); i++ {
			if ats[i].Before(from) || !ats[i].Before(to) {
				continue
			}
			ds = append(ds, ats[i].Sub(ats[i-1]))
		}
	}
	if len(ds) == 0 {
		return intervalStats{}
	}
	s := intervalStats{n: len(ds)}
	s.p50, s.p99 = percentile(ds, 50), percentile(ds, 99) // sorts ds
	s.shortest, s.longest = ds[0], ds[len(ds)-1]
	return s
}

// lastFirstCheck is when the last of the probes had its first check.
func lastFirstCheck(checks []probeCheck) time.Time {
	first := map[string]time.Time{}
	for _, c := range checks {
		if t, ok := first[c.probe]; !ok || c.at.Before(t) {
			first[c.probe] = c.at
		}
	}
	var last time.Time
	for _, t := range first {
		if t.After(last) {
			last = t
		}
	}
	return last
}
