package alerting

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExpectedBandNeedsTwoWeeks(t *testing.T) {
	if _, ok := ExpectedBand([]float64{100}, SensitivityMedium, 10); ok {
		t.Fatal("one week of history judged")
	}
	b, ok := ExpectedBand([]float64{100, 110}, SensitivityMedium, 1)
	if !ok || b.Low >= 105 || b.High <= 105 {
		t.Fatalf("band %+v (%v), want one around 105", b, ok)
	}
}

func TestExpectedBandIsRobustToOneBadWeek(t *testing.T) {
	// Three ordinary weeks and one outage week: the median ignores it.
	b, _ := ExpectedBand([]float64{1000, 0, 980, 1020}, SensitivityMedium, NoiseFloor(MetricCalls, 990, 0))
	if b.Low < 700 || b.High > 1300 {
		t.Fatalf("band %+v is dragged by the outage week", b)
	}
	if !b.Outside(CompLT, 10) || b.Outside(CompLT, 990) || b.Outside(CompGT, 990) {
		t.Fatalf("band %+v judges 10 and 990 wrongly", b)
	}
}

func TestExpectedBandSensitivityOrder(t *testing.T) {
	h := []float64{100, 120, 90, 110}
	lo, _ := ExpectedBand(h, SensitivityLow, 5)
	me, _ := ExpectedBand(h, SensitivityMedium, 5)
	hi, _ := ExpectedBand(h, SensitivityHigh, 5)
	if !(lo.High > me.High && me.High > hi.High && lo.Low <= me.Low && me.Low <= hi.Low) {
		t.Fatalf("bands not nested by sensitivity: low %+v medium %+v high %+v", lo, me, hi)
	}
}

// weekly is a week's rhythm of calls per hour: busy weekday mornings,
// quiet nights and weekends.
func weekly(hourOfWeek int) float64 {
	day, hour := hourOfWeek/24, hourOfWeek%24
	base := 20.0
	if hour >= 8 && hour < 18 {
		base = 400
	}
	if day >= 5 {
		base /= 4
	}
	return base
}

func poisson(r *rand.Rand, lambda float64) float64 {
	if lambda > 50 {
		return math.Max(0, math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64()))
	}
	l, k, p := math.Exp(-lambda), 0.0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Four synthetic weeks with a weekly rhythm: a Monday-morning peak does
// not fire, the same volume on a Sunday night does; a server gone quiet at
// an hour when it is always busy fires a calls < rule.
func TestSeasonalWeeklyRhythm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	history := func(how int) []float64 {
		h := make([]float64, SeasonalWeeks)
		for w := range h {
			h[w] = poisson(r, weekly(how))
		}
		return h
	}
	mondayMorning := 0*24 + 10
	sundayNight := 6*24 + 2
	peak := weekly(mondayMorning)
	for _, s := range []string{SensitivityLow, SensitivityMedium, SensitivityHigh} {
		b, _ := ExpectedBand(history(mondayMorning), s, NoiseFloor(MetricCalls, peak, 0))
		if b.Outside(CompGT, peak) {
			t.Errorf("%s: Monday-morning peak %v fired against %+v", s, peak, b)
		}
		if !b.Outside(CompLT, 0) {
			t.Errorf("%s: a silent Monday morning did not fire a calls < rule (band %+v)", s, b)
		}
		night := weekly(sundayNight)
		b, _ = ExpectedBand(history(sundayNight), s, NoiseFloor(MetricCalls, night, 0))
		if !b.Outside(CompGT, peak) {
			t.Errorf("%s: Monday-morning volume on a Sunday night did not fire (band %+v)", s, b)
		}
	}
}

// TestSeasonalFalseAlarmRate measures how often pure noise (Poisson calls
// around the weekly rhythm, nothing changed) leaves the band, per
// sensitivity, over every hour of 50 simulated weeks; docs/alerting.md
// quotes these figures.
func TestSeasonalFalseAlarmRate(t *testing.T) {
	limits := map[string]float64{SensitivityLow: 0.001, SensitivityMedium: 0.005, SensitivityHigh: 0.03}
	for _, s := range []string{SensitivityLow, SensitivityMedium, SensitivityHigh} {
		alarms, judged := falseAlarms(s)
		rate := float64(alarms) / float64(judged)
		t.Logf("sensitivity %s: %d of %d hourly windows of pure noise outside the band (%.3f%%)", s, alarms, judged, 100*rate)
		if rate > limits[s] {
			t.Errorf("sensitivity %s: false-alarm rate %.4f over %.4f", s, rate, limits[s])
		}
	}
}

// falseAlarms judges every hour of 50 simulated weeks of pure noise
// (after four weeks of history) with sensitivity s, and counts the hours
// outside the band.
func falseAlarms(s string) (alarms, judged int) {
	r := rand.New(rand.NewPCG(3, 4))
	const weeks = 54
	series := make([][]float64, weeks)
	for w := range series {
		series[w] = make([]float64, 7*24)
		for h := range series[w] {
			series[w][h] = poisson(r, weekly(h))
		}
	}
	for w := SeasonalWeeks; w < weeks; w++ {
		for h := 0; h < 7*24; h++ {
			hist := []float64{series[w-1][h], series[w-2][h], series[w-3][h], series[w-4][h]}
			b, _ := ExpectedBand(hist, s, NoiseFloor(MetricCalls, median(hist), 0))
			judged++
			v := series[w][h]
			if b.Outside(CompGT, v) || b.Outside(CompLT, v) {
				alarms++
			}
		}
	}
	return alarms, judged
}

// BenchmarkEvaluatePassSeasonalFalseAlarms prints, with make bench's
// alerting figures, the seasonal band's false-alarm rate on pure noise
// per sensitivity (percent of judged hourly windows).
func BenchmarkEvaluatePassSeasonalFalseAlarms(b *testing.B) {
	rates := map[string]float64{}
	for b.Loop() {
		for _, s := range []string{SensitivityLow, SensitivityMedium, SensitivityHigh} {
			alarms, judged := falseAlarms(s)
			rates[s] = 100 * float64(alarms) / float64(judged)
		}
	}
	for s, r := range rates {
		b.ReportMetric(r, "false-alarm-%-"+s)
	}
}
