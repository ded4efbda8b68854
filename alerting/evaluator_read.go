package alerting

import (
	"context"
	"slices"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// What an evaluation measures: the windows a chunk of rules needs, read for
// many rules at once in a pass (readChunk) or for one rule on demand
// (windowStats), with the tool inventory changes of rules on tool_changes.

// windowRequests lists, per MCP, the windows a chunk of rules needs: every
// rule's window (baseline false), or the baseline windows of the rules
// that have one (baseline true; the read then ends BaselineOffset earlier).
func windowRequests(chunk []*EvalRule, baseline bool) map[string]analytics.WindowRequest {
	reqs := map[string]analytics.WindowRequest{}
	// The MCPs with a rule on sessions or users: the others' details are
	// percentiles only.
	distinct := map[string]bool{}
	for _, r := range chunk {
		if baseline && (r.Baseline == nil || r.PreviousRelease()) {
			continue
		}
		q := reqs[r.MCPID]
		if !slices.Contains(q.Minutes, r.WindowMinutes) {
			q.Minutes = append(q.Minutes, r.WindowMinutes)
		}
		if r.Detailed() {
			if !slices.Contains(q.DetailMinutes, r.WindowMinutes) {
				q.DetailMinutes = append(q.DetailMinutes, r.WindowMinutes)
			}
			if key := statKey(r); !slices.Contains(q.DetailKeys, key) {
				q.DetailKeys = append(q.DetailKeys, key)
			}
			distinct[r.MCPID] = distinct[r.MCPID] || r.Metric == MetricSessions || r.Metric == MetricUsers
			q.QuantilesOnly = !distinct[r.MCPID]
		}
		reqs[r.MCPID] = q
	}
	return reqs
}

// statKey is the key of a rule's entry in a window's stats (see
// Rule.stat): its tool, or "" for the whole MCP.
func statKey(r *EvalRule) string {
	if r.Tool != nil {
		return *r.Tool
	}
	return ""
}

// readChunk measures a chunk's windows ending at now and, when some rules
// have a baseline, their windows a week earlier (nil otherwise).
// The seasonal rules' older weeks come in the same batch (chunkReads).
func (e *RuleEvaluator) readChunk(ctx context.Context, now time.Time, chunk []*EvalRule) (cur, prev map[string]map[int]map[string]analytics.WindowStat, older []map[string]map[int]map[string]analytics.WindowStat, err error) {
	sets, err := e.readSets(ctx, chunkReads(now, chunk))
	if err != nil {
		return nil, nil, nil, err
	}
	cur = sets[0]
	if len(sets) > 1 {
		prev, older = sets[1], sets[2:]
	}
	if cur, err = e.addAllCounts(ctx, now, chunk, false, cur); err != nil {
		return nil, nil, nil, err
	}
	if prev, err = e.addAllCounts(ctx, now.Add(-BaselineOffset), chunk, true, prev); err != nil {
		return nil, nil, nil, err
	}
	if cur, err = e.addProbes(ctx, chunk, cur); err != nil {
		return nil, nil, nil, err
	}
	return cur, prev, older, nil
}

// windowStats measures one rule's window and, when it has a baseline, the
// baseline window (nil otherwise).
func (e *RuleEvaluator) windowStats(ctx context.Context, r *EvalRule, now time.Time) (cur, prev map[string]analytics.WindowStat, err error) {
	from, to := r.Window(now)
	all, err := e.stats.WindowStats(ctx, from, to, []string{r.MCPID})
	if err == nil {
		all = orEmpty(all)
		err = e.ruleCounts(ctx, r, to, all)
	}
	if err == nil {
		err = e.ruleProbe(ctx, r, all)
	}
	if err != nil || r.Baseline == nil {
		return all[r.MCPID], nil, err
	}
	if r.PreviousRelease() {
		prev, err := e.releaseStats(ctx, r)
		return all[r.MCPID], prev, err
	}
	before, err := e.stats.WindowStats(ctx, from.Add(-BaselineOffset), to.Add(-BaselineOffset), []string{r.MCPID})
	if err == nil {
		before = orEmpty(before)
		err = e.ruleCounts(ctx, r, to.Add(-BaselineOffset), before)
	}
	if err != nil {
		return nil, nil, err
	}
	return all[r.MCPID], before[r.MCPID], nil
}

func orEmpty(m map[string]map[string]analytics.WindowStat) map[string]map[string]analytics.WindowStat {
	if m == nil {
		return map[string]map[string]analytics.WindowStat{}
	}
	return m
}
