package alerting

import (
	"context"
	"strings"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// MetricProbeDown is the consecutive failed checks of the MCP's probe
// (the enabled probe with the most, when it has several); 0 without a
// probe. The window plays no part: a rule on it reads the probes' state
// at evaluation time (docs/probes.md).
const MetricProbeDown = "probe_down"

// checkProbeRule refuses what a probe_down rule cannot mean: a tool or a
// baseline.
func checkProbeRule(metric string, tool, baseline *string) error {
	if metric != MetricProbeDown {
		return nil
	}
	if tool != nil {
		return telemetry.FieldError(telemetry.EINVALID, "body.tool", "A probe_down rule is about the whole MCP; leave tool null.")
	}
	if baseline != nil {
		return telemetry.FieldError(telemetry.EINVALID, "body.baseline", "A probe_down rule has no baseline.")
	}
	return nil
}

// wantsProbe reports whether a rule's reading needs its MCP's probe
// state: probe_down rules, and calls rules with < or <= (whose message
// says whether the server is down or just not called).
func wantsProbe(r *EvalRule) bool { return WantsProbeNote(r.Rule) }

// WantsProbeNote reports whether the messages of rule carry its MCP's
// probe note (probe_down rules, calls rules with < or <=).
func WantsProbeNote(rule Rule) bool {
	return rule.Metric == MetricProbeDown || (rule.Metric == MetricCalls && (rule.Comparator == CompLT || rule.Comparator == CompLE))
}

// addProbes puts the probe state of the chunk's MCPs that need it into
// every entry of their windows' stats (the rules' own entries created
// when missing), when the evaluator has a ProbeStatReader.
func (e *RuleEvaluator) addProbes(ctx context.Context, chunk []*EvalRule, stats map[string]map[int]map[string]analytics.WindowStat) (map[string]map[int]map[string]analytics.WindowStat, error) {
	if e.Probes == nil {
		return stats, nil
	}
	var mcps []string
	seen := map[string]bool{}
	for _, r := range chunk {
		if wantsProbe(r) && !seen[r.MCPID] {
			seen[r.MCPID] = true
			mcps = append(mcps, r.MCPID)
		}
	}
	if len(mcps) == 0 {
		return stats, nil
	}
	states, err := e.Probes.ProbeStats(ctx, mcps)
	if err != nil {
		return nil, err
	}
	if stats == nil {
		stats = map[string]map[int]map[string]analytics.WindowStat{}
	}
	for _, r := range chunk {
		st, ok := states[r.MCPID]
		if !wantsProbe(r) || !ok {
			continue
		}
		if stats[r.MCPID] == nil {
			stats[r.MCPID] = map[int]map[string]analytics.WindowStat{}
		}
		if stats[r.MCPID][r.WindowMinutes] == nil {
			stats[r.MCPID][r.WindowMinutes] = map[string]analytics.WindowStat{}
		}
		key := statKey(r)
		w := stats[r.MCPID][r.WindowMinutes][key]
		w.Probe = &st
		stats[r.MCPID][r.WindowMinutes][key] = w
	}
	return stats, nil
}

// ruleProbe is addProbes for one rule's stats (keyed by MCP then tool,
// as WindowStats answers).
func (e *RuleEvaluator) ruleProbe(ctx context.Context, r *EvalRule, stats map[string]map[string]analytics.WindowStat) error {
	set, err := e.addProbes(ctx, []*EvalRule{r}, nil)
	if err != nil {
		return err
	}
	for key, st := range set[r.MCPID][r.WindowMinutes] {
		if stats[r.MCPID] == nil {
			stats[r.MCPID] = map[string]analytics.WindowStat{}
		}
		cur := stats[r.MCPID][key]
		cur.Probe = st.Probe
		stats[r.MCPID][key] = cur
	}
	return nil
}

// ProbeNote is what a firing adds about the MCP's probe: whether the
// server answers ("quiet: ...") or since when it is down and why; "" for
// a probe never checked.
func ProbeNote(p *analytics.ProbeStat, now time.Time) string {
	if p == nil {
		return ""
	}
	switch p.Status {
	case ProbeUp:
		return "quiet: the server answers, nobody is calling"
	case ProbeDown:
		since := p.DownSince.UTC()
		when := since.Format("15:04")
		if now.Sub(since) > 20*time.Hour {
			when = since.Format("2006-01-02 15:04")
		}
		why := p.LastError
		if _, detail, ok := strings.Cut(why, ": "); ok {
			why = detail
		}
		return "down since " + when + " UTC: " + why
	}
	return ""
}

// WithProbeNote adds the probe note of p (nil: none) to the deliveries
// of a rule still firing, as its first notice had it: a re-notification
// says whether the server is still down, and why, at the time it is sent.
func WithProbeNote(ds []PlannedDelivery, p *analytics.ProbeStat, now time.Time) []PlannedDelivery {
	return withProbeNote(ds, Reading{Probe: p}, now)
}

// withProbeNote adds the reading's probe note to a firing's deliveries.
func withProbeNote(ds []PlannedDelivery, rd Reading, now time.Time) []PlannedDelivery {
	note := ProbeNote(rd.Probe, now)
	if note == "" {
		return ds
	}
	for i := range ds {
		ds[i].Body += " Probe: " + note + "."
		ds[i].Summary += "; probe " + note
	}
	return ds
}
