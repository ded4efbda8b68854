package alerting

import (
	"math"
	"sort"
	"time"
)

// Seasonal baselines: a rule with baseline "seasonal" compares its window's
// value with what the same window looked like at the same hour of the week
// in the weeks before, so that a Monday-morning peak is normal and the same
// volume on a Sunday night is not.
//
// The expected band is robust to the odd bad week: its centre is the median
// of the past weeks' values and its width the median absolute deviation
// (scaled by 1.4826 to estimate a standard deviation under normal noise),
// never narrower than the metric's own sampling noise (the floor the caller
// gives: √n for counts). The band is centre ± k × width, k set by the
// rule's sensitivity. docs/alerting.md gives the false-alarm rates measured
// on pure noise (TestSeasonalFalseAlarmRate prints them).

// BaselineSeasonal is the rule baseline that learns the week's rhythm.
const BaselineSeasonal = "seasonal"

// Sensitivities of a seasonal rule: how far outside the usual a value must
// be to fire.
const (
	SensitivityLow    = "low"
	SensitivityMedium = "medium"
	SensitivityHigh   = "high"
)

// SeasonalWeeks is how many past weeks the band is learnt from, and
// SeasonalMinWeeks how many must have data before a seasonal rule judges
// at all (until then its readings hold its state).
const (
	SeasonalWeeks    = 4
	SeasonalMinWeeks = 2
	Week             = 7 * 24 * time.Hour
)

// sensitivityK is the band's half-width in robust standard deviations.
var sensitivityK = map[string]float64{
	SensitivityLow:    6,
	SensitivityMedium: 4.5,
	SensitivityHigh:   3,
}

// ValidSensitivity reports whether s is a sensitivity.
func ValidSensitivity(s string) bool {
	_, ok := sensitivityK[s]
	return ok
}

// Band is the expected range of a seasonal rule's value.
type Band struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// ExpectedBand learns the band from history, the same window's value in
// each past week that has data (most recent first; at most SeasonalWeeks
// are used). floor is the least half-width unit the metric's sampling
// noise allows (see NoiseFloor). It returns false with fewer than
// SeasonalMinWeeks values: too little history to judge.
func ExpectedBand(history []float64, sensitivity string, floor float64) (Band, bool) {
	if len(history) > SeasonalWeeks {
		history = history[:SeasonalWeeks]
	}
	if len(history) < SeasonalMinWeeks {
		return Band{}, false
	}
	k, ok := sensitivityK[sensitivity]
	if !ok {
		k = sensitivityK[SensitivityMedium]
	}
	m := median(history)
	dev := make([]float64, len(history))
	for i, v := range history {
		dev[i] = math.Abs(v - m)
	}
	width := math.Max(1.4826*median(dev), floor)
	low := m - k*width
	if low < 0 {
		low = 0 // every metric a rule reads is >= 0
	}
	return Band{Low: low, High: m + k*width}, true
}

// Outside reports whether value leaves the band in the comparator's
// direction: above it for > and >=, below it for < and <=.
func (b Band) Outside(comparator string, value float64) bool {
	switch comparator {
	case CompGT, CompGE:
		return value > b.High
	case CompLT, CompLE:
		return value < b.Low
	}
	return false
}

// NoiseFloor is the sampling noise of a metric's value, the least width a
// band may have: counts vary by about √n from window to window even when
// nothing changes (Poisson); an error rate by √(p(1-p)/calls) (binomial);
// latencies and ratios by a tenth of their value. centre is the band's
// centre (the history's median) and calls the typical window's calls.
func NoiseFloor(metric string, centre float64, calls float64) float64 {
	switch metric {
	case MetricCalls, MetricErrors, MetricSessions, MetricUsers, MetricToolChanges:
		return math.Sqrt(math.Max(centre, 1))
	case MetricErrorRate:
		p := math.Min(math.Max(centre, 0), 1)
		n := math.Max(calls, 1)
		return math.Max(math.Sqrt(p*(1-p)/n), 1/n)
	}
	return math.Max(0.1*centre, 1)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
