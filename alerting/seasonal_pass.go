package alerting

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// chunkReads lists the window reads a chunk of rules needs, all answered in
// one batch: every rule's window ending at now; a week earlier, the windows
// of the rules with a baseline (week_ago and seasonal share that read);
// and two to SeasonalWeeks weeks earlier, the seasonal rules' windows.
func chunkReads(now time.Time, chunk []*EvalRule) []analytics.WindowRead {
	reads := []analytics.WindowRead{{To: now, Reqs: windowRequests(chunk, false)}}
	baseline := windowRequests(chunk, true)
	if len(baseline) == 0 {
		return reads
	}
	reads = append(reads, analytics.WindowRead{To: now.Add(-BaselineOffset), Reqs: baseline})
	var seasonal []*EvalRule
	for _, r := range chunk {
		if r.Seasonal() {
			seasonal = append(seasonal, r)
		}
	}
	if len(seasonal) == 0 {
		return reads
	}
	reqs := windowRequests(seasonal, false)
	for _, off := range SeasonalOffsets()[1:] {
		reads = append(reads, analytics.WindowRead{To: now.Add(-off), Reqs: reqs})
	}
	return reads
}

// readSets answers reads in one batch when the reader takes batches (their
// statements run concurrently, and an error in any fails them all), one
// after the other otherwise.
func (e *RuleEvaluator) readSets(ctx context.Context, reads []analytics.WindowRead) ([]map[string]map[int]map[string]analytics.WindowStat, error) {
	if b, ok := e.stats.(analytics.WindowSetBatchReader); ok && len(reads) > 1 {
		return b.WindowSetsBatch(ctx, reads)
	}
	out := make([]map[string]map[int]map[string]analytics.WindowStat, len(reads))
	for i, rd := range reads {
		set, err := e.stats.WindowSets(ctx, rd.To, rd.Reqs)
		if err != nil {
			return nil, err
		}
		out[i] = set
	}
	return out, nil
}

// past is a rule's past windows in the chunk: the week-ago one and, for a
// seasonal rule, the older weeks (see EvalRule.readAt).
func (cr *chunkRead) past(r *EvalRule) []map[string]analytics.WindowStat {
	if r.PreviousRelease() {
		return []map[string]analytics.WindowStat{cr.release[r.MCPID]}
	}
	past := []map[string]analytics.WindowStat{cr.prev[r.MCPID][r.WindowMinutes]}
	if !r.Seasonal() {
		return past
	}
	for i := 1; i < SeasonalWeeks; i++ {
		var week map[string]analytics.WindowStat
		if i-1 < len(cr.older) {
			week = cr.older[i-1][r.MCPID][r.WindowMinutes]
		}
		past = append(past, week)
	}
	return past
}

// seasonalHistory completes one rule's past windows for an evaluation on
// demand: prev (a week back) and, for a seasonal rule, the same window two
// to SeasonalWeeks weeks back.
func (e *RuleEvaluator) seasonalHistory(ctx context.Context, r *EvalRule, now time.Time, prev map[string]analytics.WindowStat) ([]map[string]analytics.WindowStat, error) {
	past := []map[string]analytics.WindowStat{prev}
	if !r.Seasonal() {
		return past, nil
	}
	from, to := r.Window(now)
	for _, off := range SeasonalOffsets()[1:] {
		week, err := e.stats.WindowStats(ctx, from.Add(-off), to.Add(-off), []string{r.MCPID})
		if err != nil {
			return nil, err
		}
		past = append(past, week[r.MCPID])
	}
	return past, nil
}
