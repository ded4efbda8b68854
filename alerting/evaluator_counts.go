package alerting

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// The counts that come from outside the window read: tool inventory
// changes (tool_changes), repeated calls (repeated_calls) and calls of
// unknown tools (unknown_tool_calls), each from its own counter.

// windowCounter is one such count: the metric it measures and the
// counter's read, whose answer per MCP, window and tool sets its count
// into a WindowStat.
type windowCounter struct {
	metric string
	count  func(context.Context, time.Time, map[string]analytics.WindowRequest) (map[string]map[int]map[string]func(*analytics.WindowStat), error)
}

// counterOf makes a windowCounter of a read answering counts of type T,
// each set into a WindowStat by set.
func counterOf[T any](metric string,
	count func(context.Context, time.Time, map[string]analytics.WindowRequest) (map[string]map[int]map[string]T, error),
	set func(*analytics.WindowStat, T)) windowCounter {
	return windowCounter{metric, func(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]func(*analytics.WindowStat), error) {
		counts, err := count(ctx, to, reqs)
		if err != nil {
			return nil, err
		}
		out := make(map[string]map[int]map[string]func(*analytics.WindowStat), len(counts))
		for mcp, windows := range counts {
			out[mcp] = make(map[int]map[string]func(*analytics.WindowStat), len(windows))
			for minutes, tools := range windows {
				out[mcp][minutes] = make(map[string]func(*analytics.WindowStat), len(tools))
				for tool, n := range tools {
					out[mcp][minutes][tool] = func(st *analytics.WindowStat) { set(st, n) }
				}
			}
		}
		return out, nil
	}}
}

// counters lists the evaluator's counters that are set.
func (e *RuleEvaluator) counters() []windowCounter {
	var cs []windowCounter
	if e.Changes != nil {
		cs = append(cs, counterOf(MetricToolChanges, e.Changes.ToolChangeCounts,
			func(st *analytics.WindowStat, n analytics.ToolChangeCount) {
				st.ToolChanges, st.ToolChangeCount = n.All, n
			}))
	}
	if e.Repeats != nil {
		cs = append(cs, counterOf(MetricRepeatedCalls, e.Repeats.RepeatCounts,
			func(st *analytics.WindowStat, n int64) { st.RepeatedCalls = n }))
	}
	if e.Unknown != nil {
		cs = append(cs, counterOf(MetricUnknownToolCalls, e.Unknown.UnknownToolCounts,
			func(st *analytics.WindowStat, n int64) { st.UnknownToolCalls = n }))
	}
	return cs
}

// addAllCounts adds every counter's counts of the chunk's rules (those
// with a baseline only, when baseline) for their windows ending at to.
func (e *RuleEvaluator) addAllCounts(ctx context.Context, to time.Time, chunk []*EvalRule, baseline bool,
	stats map[string]map[int]map[string]analytics.WindowStat) (map[string]map[int]map[string]analytics.WindowStat, error) {
	var err error
	for _, c := range e.counters() {
		if stats, err = c.add(ctx, to, chunk, baseline, stats); err != nil {
			return nil, err
		}
	}
	return stats, nil
}

// ruleCounts counts one rule's window ending at to into stats (keyed by
// MCP, as WindowStats answers), when a counter measures its metric.
func (e *RuleEvaluator) ruleCounts(ctx context.Context, r *EvalRule, to time.Time, stats map[string]map[string]analytics.WindowStat) error {
	for _, c := range e.counters() {
		if c.metric != r.Metric {
			continue
		}
		counts, err := c.count(ctx, to, windowRequests([]*EvalRule{r}, false))
		if err != nil {
			return err
		}
		for tool, set := range counts[r.MCPID][r.WindowMinutes] {
			if stats[r.MCPID] == nil {
				stats[r.MCPID] = map[string]analytics.WindowStat{}
			}
			st := stats[r.MCPID][tool]
			set(&st)
			stats[r.MCPID][tool] = st
		}
	}
	return nil
}

// add asks the counter for the windows of the chunk's rules on its metric
// (those with a baseline only, when baseline) ending at to, and sets each
// count into stats.
func (c windowCounter) add(ctx context.Context, to time.Time, chunk []*EvalRule, baseline bool,
	stats map[string]map[int]map[string]analytics.WindowStat) (map[string]map[int]map[string]analytics.WindowStat, error) {
	var rules []*EvalRule
	for _, r := range chunk {
		if r.Metric == c.metric {
			rules = append(rules, r)
		}
	}
	reqs := windowRequests(rules, baseline)
	if len(reqs) == 0 {
		return stats, nil
	}
	counts, err := c.count(ctx, to, reqs)
	if err != nil {
		return nil, err
	}
	if stats == nil {
		stats = map[string]map[int]map[string]analytics.WindowStat{}
	}
	for mcp, windows := range counts {
		if stats[mcp] == nil {
			stats[mcp] = map[int]map[string]analytics.WindowStat{}
		}
		for minutes, tools := range windows {
			if stats[mcp][minutes] == nil {
				stats[mcp][minutes] = map[string]analytics.WindowStat{}
			}
			for tool, set := range tools {
				st := stats[mcp][minutes][tool]
				set(&st)
				stats[mcp][minutes][tool] = st
			}
		}
	}
	return stats, nil
}
