package alerting

import "github.com/mcpscope/telemetry/analytics"

// Value picks the rule's figure out of its MCP's window stats, as
// analytics.WindowReader returns them for the rule's window: the "" entry
// (every item of the MCP) or, for a rule naming a tool, that tool's
// tools/call items. An absent entry means no items: counts and error_rate
// are 0 (ok true), p95_ms has no value (ok false). error_rate is
// errors / calls, 0 when there are no calls, like the metric reads.
func (r Rule) Value(stats map[string]analytics.WindowStat) (value float64, ok bool) {
	st := r.stat(stats)
	if r.ErrorKind != nil {
		st.Errors = st.ErrorKinds[*r.ErrorKind]
	}
	switch r.Metric {
	case MetricCalls:
		return float64(st.Calls), true
	case MetricErrors:
		return float64(st.Errors), true
	case MetricErrorRate:
		if st.Calls == 0 {
			return 0, true
		}
		return float64(st.Errors) / float64(st.Calls), true
	case MetricP95:
		return derefValue(st.P95Ms)
	case MetricP50:
		return derefValue(st.P50Ms)
	case MetricP99:
		return derefValue(st.P99Ms)
	case MetricSessions:
		return float64(st.Sessions), true
	case MetricUsers:
		return float64(st.Users), true
	case MetricToolChanges:
		if r.MinSeverity != nil {
			return float64(st.ToolChangeCount.AtLeast(*r.MinSeverity)), true
		}
		return float64(st.ToolChanges), true
	case MetricProbeDown:
		if st.Probe == nil {
			return 0, true
		}
		return float64(st.Probe.Failures), true
	case MetricUnknownToolCalls:
		return float64(st.UnknownToolCalls), true
	case MetricRepeatedCalls:
		return float64(st.RepeatedCalls), true
	}
	return 0, false
}

func derefValue(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// stat returns the rule's entry of a window's stats (see Value).
func (r Rule) stat(stats map[string]analytics.WindowStat) analytics.WindowStat {
	if r.Tool != nil {
		return stats[*r.Tool]
	}
	return stats[""]
}

// Reading is what one evaluation of a rule measured and concluded.
type Reading struct {
	// Value is the figure compared with the threshold: the metric over the
	// window or, with a baseline, its ratio to the baseline's; HasValue is
	// false when there is none (a percentile without measured calls, or a
	// baseline with no value).
	Value    float64
	HasValue bool
	// Baseline is the baseline window's figure, when the rule has one and
	// it has a value.
	Baseline *float64
	// Calls is the number of calls in the window (what min_calls counts).
	Calls int64
	// Breached: the rule's condition holds.
	Breached bool
	// Probe is the MCP's probe state, for the rules that read it
	// (probe_down; calls with < or <=), nil otherwise or without a probe.
	Probe *analytics.ProbeStat
	// Hold: the reading cannot judge the rule (a guarded metric under
	// min_calls, a baseline of 0 or none, a seasonal rule with too little
	// history), which keeps its state whatever it is.
	Hold bool
	// Expected is a seasonal rule's band for this hour of the week; nil
	// for other rules and while its history is too short.
	Expected *Band
	// ChangeNote names the changes of a firing tool_changes rule
	// (ToolChangeNote); "" otherwise.
	ChangeNote string
}

// Read measures the rule: cur is its window's stats and prev the baseline
// window's (nil without a baseline), both as analytics.WindowSetReader
// returns them for one MCP and window length.
//
//   - A guarded metric (error_rate, errors, latencies) over a window with
//     fewer than MinCalls calls holds the rule's state, whatever its
//     value: too few calls to say the condition holds, or that it ended.
//   - With a baseline, the value is the window's figure divided by the
//     baseline window's; when the baseline's figure is 0 or has no value,
//     the reading holds the rule's state (there is nothing to compare with).
func (r Rule) Read(cur, prev map[string]analytics.WindowStat) Reading {
	value, ok := r.Value(cur)
	rd := Reading{Value: value, HasValue: ok, Calls: r.stat(cur).Calls, Probe: r.stat(cur).Probe}
	if r.MinCalls > 0 && contains(guarded, r.Metric) && rd.Calls < int64(r.MinCalls) {
		rd.Hold = true
		return rd
	}
	if r.Ratio() {
		base, bok := r.Value(prev)
		if bok {
			rd.Baseline = &base
		}
		if !bok || base == 0 {
			rd.Value, rd.HasValue, rd.Hold = 0, false, true
			return rd
		}
		rd.Value = value / base
	}
	rd.Breached = r.Breached(rd.Value, rd.HasValue)
	return rd
}

// Breached reports whether a measured value breaks the rule. hasValue is
// false when the metric has no value over the window, which happens only for
// p95_ms with no measured call (counts and error_rate are 0 on no data): a
// p95 rule with no data is not breached, since there is no latency to be too
// high or too low. A calls rule with no data sees 0, so "calls < 1" fires
// when an MCP goes silent.
func (r Rule) Breached(value float64, hasValue bool) bool {
	return hasValue && Compare(r.Comparator, value, r.Threshold)
}

// Names reports whether the rule asks for deliveries on channel.
func (r Rule) Names(channel string) bool {
	return contains(r.Channels, channel)
}

// Compare applies a comparator. An unknown comparator, or NaN on either side,
// compares false, so a corrupt rule can never fire.
func Compare(comparator string, value, threshold float64) bool {
	switch comparator {
	case CompGT:
		return value > threshold
	case CompGE:
		return value >= threshold
	case CompLT:
		return value < threshold
	case CompLE:
		return value <= threshold
	}
	return false
}

// Transition returns a rule's next state after an evaluation, and whether
// that evaluation fired it (ok → firing: create deliveries) or resolved it
// (firing → ok). A firing rule that is still breached does not fire again.
// An unknown state is treated as ok.
func Transition(state string, breached bool) (next string, fired, resolved bool) {
	switch {
	case state == StateFiring && breached:
		return StateFiring, false, false
	case state == StateFiring:
		return StateOK, false, true
	case breached:
		return StateFiring, true, false
	default:
		return StateOK, false, false
	}
}

// Evaluation is the answer of POST /v1/rules/{ruleId}/evaluate: the state
// after evaluating, the measured value (null when the metric has no value,
// see Rule.Breached) and whether this evaluation fired the rule.
type Evaluation struct {
	State string   `json:"state"`
	Value *float64 `json:"value"`
	Fired bool     `json:"fired"`
	// Resolved: this evaluation resolved the rule (firing → ok).
	Resolved bool `json:"resolved"`
	// BaselineValue is the baseline window's figure; nil without a
	// baseline, or when it has no value.
	BaselineValue *float64 `json:"baseline_value"`
	// Calls is the window's number of calls, what min_calls is checked
	// against.
	Calls int64 `json:"calls"`
	// Expected is a seasonal rule's band at this hour of the week; nil
	// for other rules and while fewer than SeasonalMinWeeks weeks of
	// history exist (the rule then holds its state).
	Expected *Band `json:"expected"`
	// Deliveries is how many deliveries this evaluation created (0 when
	// it changed nothing, when snoozed, or on a resolve without
	// notify_on_resolve). An evaluation that keeps a rule firing creates
	// some when it sends the notice of a firing its snooze muted
	// (Rule.SnoozeEnded).
	Deliveries int `json:"deliveries"`
}
