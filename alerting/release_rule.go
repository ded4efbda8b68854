package alerting

import (
	"context"
	"slices"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// The previous_release baseline (docs/releases.md): the value compared with
// the threshold is the rule's window's figure divided by the previous
// release's over its last analytics.ReleaseWindowHours hours of traffic
// before the latest release appeared (the release comparison's base
// window), so error_rate > 2 means "twice the previous release's".

// BaselinePreviousRelease compares with the release before the latest.
const BaselinePreviousRelease = "previous_release"

// releaseMetrics are the metrics the release rollup measures.
var releaseMetrics = []string{MetricCalls, MetricErrors, MetricErrorRate, MetricP95}

// PreviousReleaseReader gives the figures of an MCP's previous release
// (analytics.ReleaseComparer does): keyed by tool, "" for every item; nil
// when the MCP has fewer than two releases.
type PreviousReleaseReader interface {
	PreviousReleaseStats(ctx context.Context, mcpID string) (map[string]analytics.WindowStat, error)
}

// PreviousRelease reports whether the rule's baseline is previous_release.
func (r Rule) PreviousRelease() bool {
	return r.Baseline != nil && *r.Baseline == BaselinePreviousRelease
}

// checkPreviousRelease refuses a previous_release baseline on a metric the
// release rollup does not measure.
func (c RuleCreate) checkPreviousRelease() error {
	if c.Baseline == nil || *c.Baseline != BaselinePreviousRelease || slices.Contains(releaseMetrics, c.Metric) {
		return nil
	}
	return telemetry.FieldError(telemetry.EINVALID, "body.baseline",
		"The previous_release baseline is for calls, errors, error_rate and p95_ms; %s is not measured per release.", c.Metric)
}

// readReleases reads the previous release's figures of every MCP with a
// previous_release rule in the chunk (nil without such a rule).
func (e *RuleEvaluator) readReleases(ctx context.Context, chunk []*EvalRule) (map[string]map[string]analytics.WindowStat, error) {
	var out map[string]map[string]analytics.WindowStat
	for _, r := range chunk {
		if !r.PreviousRelease() || e.Releases == nil {
			continue
		}
		if out == nil {
			out = map[string]map[string]analytics.WindowStat{}
		}
		if _, ok := out[r.MCPID]; ok {
			continue
		}
		st, err := e.Releases.PreviousReleaseStats(ctx, r.MCPID)
		if err != nil {
			return nil, err
		}
		out[r.MCPID] = st
	}
	return out, nil
}

// releaseStats is one rule's previous release figures (nil without a
// reader or a previous release: the rule then holds its state).
func (e *RuleEvaluator) releaseStats(ctx context.Context, r *EvalRule) (map[string]analytics.WindowStat, error) {
	if e.Releases == nil {
		return nil, nil
	}
	return e.Releases.PreviousReleaseStats(ctx, r.MCPID)
}
