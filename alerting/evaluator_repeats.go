package alerting

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// addRepeats counts, for the chunk's rules on repeated_calls (those with a
// baseline only, when baseline), the repeats of their windows ending at
// to, into stats.
func (e *RuleEvaluator) addRepeats(ctx context.Context, to time.Time, chunk []*EvalRule, baseline bool,
	stats map[string]map[int]map[string]analytics.WindowStat) (map[string]map[int]map[string]analytics.WindowStat, error) {
	if e.Repeats == nil {
		return stats, nil
	}
	return addCounts(ctx, to, chunk, baseline, stats, MetricRepeatedCalls, e.Repeats.RepeatCounts,
		func(st *analytics.WindowStat, n int64) { st.RepeatedCalls = n })
}

// ruleRepeats counts the repeats of one repeated_calls rule's window
// ending at to into stats (keyed by MCP, as WindowStats answers).
func (e *RuleEvaluator) ruleRepeats(ctx context.Context, r *EvalRule, to time.Time, stats map[string]map[string]analytics.WindowStat) error {
	if r.Metric != MetricRepeatedCalls {
		return nil
	}
	set, err := e.addRepeats(ctx, to, []*EvalRule{r}, false, nil)
	if err != nil {
		return err
	}
	for tool, st := range set[r.MCPID][r.WindowMinutes] {
		if stats[r.MCPID] == nil {
			stats[r.MCPID] = map[string]analytics.WindowStat{}
		}
		cur := stats[r.MCPID][tool]
		cur.RepeatedCalls = st.RepeatedCalls
		stats[r.MCPID][tool] = cur
	}
	return nil
}

// addCounts asks count for the windows of the chunk's rules on metric
// (those with a baseline only, when baseline) ending at to, and sets each
// count into stats with set: the counters that come from outside the
// window read (tool changes, repeats).
func addCounts[T any](ctx context.Context, to time.Time, chunk []*EvalRule, baseline bool,
	stats map[string]map[int]map[string]analytics.WindowStat, metric string,
	count func(context.Context, time.Time, map[string]analytics.WindowRequest) (map[string]map[int]map[string]T, error),
	set func(*analytics.WindowStat, T)) (map[string]map[int]map[string]analytics.WindowStat, error) {
	var rules []*EvalRule
	for _, r := range chunk {
		if r.Metric == metric {
			rules = append(rules, r)
		}
	}
	reqs := windowRequests(rules, baseline)
	if len(reqs) == 0 {
		return stats, nil
	}
	counts, err := count(ctx, to, reqs)
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
			for tool, n := range tools {
				st := stats[mcp][minutes][tool]
				set(&st, n)
				stats[mcp][minutes][tool] = st
			}
		}
	}
	return stats, nil
}
