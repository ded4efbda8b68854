package alerting

import (
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Seasonal rules (baseline "seasonal"): the rule's window is compared with
// the same window, at the same hour of the week, in each of the last
// SeasonalWeeks weeks (ExpectedBand), and the rule is breached when its
// value leaves that band in the comparator's direction (> and >= above
// it, < and <= below it). The threshold plays no part. The rule pass reads
// the four past weeks in the same batch as the rule's own window
// (analytics.WindowSetBatchReader), so a seasonal rule costs the pass four
// more windows per MCP, not a scan of four weeks.

// Seasonal reports whether the rule has a seasonal baseline.
func (r Rule) Seasonal() bool {
	return r.Baseline != nil && *r.Baseline == BaselineSeasonal
}

// Ratio reports whether the rule's value is a ratio to a baseline window
// (baseline week_ago).
func (r Rule) Ratio() bool {
	return r.Baseline != nil && (*r.Baseline == BaselineWeekAgo || *r.Baseline == BaselinePreviousRelease)
}

// SensitivityOrDefault is the seasonal rule's sensitivity, medium when
// unset.
func (r Rule) SensitivityOrDefault() string {
	if r.Sensitivity != nil {
		return *r.Sensitivity
	}
	return SensitivityMedium
}

// checkBaseline validates the baseline and the sensitivity that goes with
// a seasonal one.
func (c RuleCreate) checkBaseline() error {
	if c.Baseline != nil && *c.Baseline != BaselineWeekAgo && *c.Baseline != BaselineSeasonal && *c.Baseline != BaselinePreviousRelease {
		return telemetry.FieldError(telemetry.EINVALID, "body.baseline", "The baseline must be null, \"week_ago\", \"seasonal\" or \"previous_release\".")
	}
	if err := c.checkPreviousRelease(); err != nil {
		return err
	}
	seasonal := c.Baseline != nil && *c.Baseline == BaselineSeasonal
	if c.Sensitivity != nil && !seasonal {
		return telemetry.FieldError(telemetry.EINVALID, "body.sensitivity", "A sensitivity is for seasonal rules only (baseline \"seasonal\").")
	}
	if c.Sensitivity != nil && !ValidSensitivity(*c.Sensitivity) {
		return telemetry.FieldError(telemetry.EINVALID, "body.sensitivity", "The sensitivity must be low, medium or high.")
	}
	if seasonal && c.Metric == MetricToolChanges {
		return telemetry.FieldError(telemetry.EINVALID, "body.baseline", "tool_changes has no weekly rhythm to learn; use a threshold without a seasonal baseline.")
	}
	return nil
}

// sensitivity is the stored sensitivity: the given one, medium for a
// seasonal rule without one, nil for other rules.
func (c RuleCreate) sensitivity() *string {
	if c.Baseline == nil || *c.Baseline != BaselineSeasonal {
		return nil
	}
	if c.Sensitivity != nil {
		return cloneString(c.Sensitivity)
	}
	s := SensitivityMedium
	return &s
}

// SeasonalOffsets are how far back each week of a seasonal rule's history
// lies: one to SeasonalWeeks weeks.
func SeasonalOffsets() []time.Duration {
	out := make([]time.Duration, SeasonalWeeks)
	for i := range out {
		out[i] = time.Duration(i+1) * Week
	}
	return out
}

// ReadSeasonal measures a seasonal rule at now: cur is its window's stats
// and past[i] the same window i+1 weeks earlier (as WindowSets returns
// them for one MCP and window length; a missing week is nil). mcpCreated
// is when the rule's MCP was created (zero: unknown).
//
// A past week is history when the MCP existed for the whole of that week's
// window or its window held items: a week before the MCP existed says
// nothing about what is usual. With fewer than SeasonalMinWeeks weeks of
// history the reading holds the rule's state, as it does for a guarded
// metric under min_calls.
func (r Rule) ReadSeasonal(now time.Time, cur map[string]analytics.WindowStat, past []map[string]analytics.WindowStat, mcpCreated time.Time) Reading {
	value, ok := r.Value(cur)
	rd := Reading{Value: value, HasValue: ok, Calls: r.stat(cur).Calls}
	if r.MinCalls > 0 && contains(guarded, r.Metric) && rd.Calls < int64(r.MinCalls) {
		rd.Hold = true
		return rd
	}
	var history, calls []float64
	for i, week := range past {
		from, _ := r.Window(now.Add(-time.Duration(i+1) * Week))
		if mcpCreated.After(from) && week[""].Calls == 0 {
			continue
		}
		if v, ok := r.Value(week); ok {
			history = append(history, v)
			calls = append(calls, float64(r.stat(week).Calls))
		}
	}
	band, ok := ExpectedBand(history, r.SensitivityOrDefault(), NoiseFloor(r.Metric, median(history), median(calls)))
	if !ok {
		rd.Hold = true
		return rd
	}
	rd.Expected = &band
	rd.Breached = rd.HasValue && band.Outside(r.Comparator, rd.Value)
	return rd
}

// readAt measures any rule: ReadSeasonal for a seasonal one, Read with
// the week-ago window (past[0]) otherwise.
func (r *EvalRule) readAt(now time.Time, cur map[string]analytics.WindowStat, past []map[string]analytics.WindowStat) Reading {
	if r.Seasonal() {
		return r.ReadSeasonal(now, cur, past, r.MCPCreatedAt)
	}
	var prev map[string]analytics.WindowStat
	if len(past) > 0 {
		prev = past[0]
	}
	return r.Read(cur, prev)
}

// seasonalRuleText describes a seasonal rule's condition, e.g. "above the
// usual for this hour of the week (medium sensitivity)".
func (r Rule) seasonalRuleText() string {
	dir := "above"
	if r.Comparator == CompLT || r.Comparator == CompLE {
		dir = "below"
	}
	return dir + " the usual for this hour of the week (" + r.SensitivityOrDefault() + " sensitivity)"
}

// ExpectedText says what a seasonal rule expected and got, e.g.
// "expected 0.4%–1.1% at this hour, got 7%".
func (r Rule) ExpectedText(b Band, value float64) string {
	return "expected " + formatMetric(r.Metric, b.Low) + "–" + formatMetric(r.Metric, b.High) + " at this hour, got " + formatMetric(r.Metric, value)
}

// PlanSeasonalFanOut decides the deliveries of one firing of a seasonal
// rule (PlanFanOut's audience), saying what was expected at this hour:
// "Over the last 10 minutes: calls expected 120–180 at this hour, got 3
// (rule: below the usual for this hour of the week (medium sensitivity))."
// title is "Firing" or "Still firing".
func PlanSeasonalFanOut(rule Rule, title string, value float64, b Band, audience []Member, connected map[string]bool) []PlannedDelivery {
	got := metricLabel(rule.Metric) + " " + rule.ExpectedText(b, value)
	return withValue(planDeliveries(rule, KindFiring, title+": "+rule.Name+" ("+metricLabel(rule.Metric)+" "+formatMetric(rule.Metric, value)+")",
		"Over the last "+windowText(rule.WindowMinutes)+": "+got+rule.toolText()+" (rule: "+rule.ruleText()+").", got, audience, connected), &value)
}

// planFiring is the fan-out of a firing measured as rd: the seasonal one
// when rd has a band, PlanFanOut's otherwise.
func planFiring(rule Rule, rd Reading, audience []Member, connected map[string]bool) []PlannedDelivery {
	if rd.Expected != nil && rule.Seasonal() {
		return PlanSeasonalFanOut(rule, "Firing", rd.Value, *rd.Expected, audience, connected)
	}
	ds := PlanFanOut(rule, rd.Value, audience, connected)
	if rd.ChangeNote != "" {
		for i := range ds {
			ds[i].Body += " " + rd.ChangeNote
		}
	}
	return ds
}
