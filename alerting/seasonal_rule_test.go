package alerting

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func seasonalCreate(metric, comparator string) RuleCreate {
	b := BaselineSeasonal
	return RuleCreate{Name: "Usual", Metric: metric, Comparator: comparator, WindowMinutes: 30,
		Channels: []string{ChannelInApp}, Baseline: &b}
}

func TestSeasonalRuleValidation(t *testing.T) {
	c := seasonalCreate(MetricCalls, CompLT)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := c.Rule("rul_1", "mcp_1", time.Now())
	if r.Sensitivity == nil || *r.Sensitivity != SensitivityMedium {
		t.Fatalf("default sensitivity %v, want medium", r.Sensitivity)
	}
	bad := func(c RuleCreate, field string) {
		t.Helper()
		err := c.Validate()
		if telemetry.ErrorCode(err) != telemetry.EINVALID || !strings.Contains(err.Error(), "(body."+field+")") {
			t.Fatalf("%+v: %v, want EINVALID on %s", c, err, field)
		}
	}
	loud := "loud"
	c.Sensitivity = &loud
	bad(c, "sensitivity")
	high := SensitivityHigh
	plain := RuleCreate{Name: "x", Metric: MetricCalls, Comparator: CompLT, WindowMinutes: 5, Channels: []string{ChannelInApp}, Sensitivity: &high}
	bad(plain, "sensitivity")
	bad(seasonalCreate(MetricToolChanges, CompGT), "baseline")
	other := "monthly"
	c = seasonalCreate(MetricCalls, CompLT)
	c.Baseline = &other
	bad(c, "baseline")

	// Leaving the seasonal baseline drops the sensitivity; changing it
	// redefines the rule.
	r.State = StateFiring
	next, err := RuleUpdate{Sensitivity: NullableString{Set: true, Value: &high}}.Apply(r, time.Now())
	if err != nil || *next.Sensitivity != SensitivityHigh || next.State != StateOK {
		t.Fatalf("sensitivity change: %+v, %v", next, err)
	}
	week := BaselineWeekAgo
	next, err = RuleUpdate{Baseline: NullableString{Set: true, Value: &week}}.Apply(next, time.Now())
	if err != nil || next.Sensitivity != nil {
		t.Fatalf("week_ago: sensitivity %v, %v", next.Sensitivity, err)
	}
}

// stats is one MCP window holding calls items of which errors failed.
func stats(calls, errors int64) map[string]analytics.WindowStat {
	return map[string]analytics.WindowStat{"": {Calls: calls, Errors: errors}}
}

func TestReadSeasonal(t *testing.T) {
	now := time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC)
	long := now.Add(-60 * 24 * time.Hour)
	rule := func(metric, comp string) Rule {
		return seasonalCreate(metric, comp).Rule("rul_1", "mcp_1", now)
	}
	busy := []map[string]analytics.WindowStat{stats(1000, 5), stats(980, 4), stats(1030, 6), stats(1010, 5)}

	rd := rule(MetricCalls, CompGT).ReadSeasonal(now, stats(1020, 0), busy, long)
	if rd.Hold || rd.Breached || rd.Expected == nil || rd.Expected.Low > 1020 || rd.Expected.High < 1020 {
		t.Fatalf("usual peak: %+v", rd)
	}
	if rd := rule(MetricCalls, CompLT).ReadSeasonal(now, stats(40, 0), busy, long); !rd.Breached {
		t.Fatalf("quiet at a busy hour did not breach calls <: %+v", rd)
	}
	if rd := rule(MetricCalls, CompGT).ReadSeasonal(now, stats(40, 0), busy, long); rd.Breached {
		t.Fatalf("quiet breached calls >: %+v", rd)
	}

	// One week of history: no judgement.
	if rd := rule(MetricCalls, CompLT).ReadSeasonal(now, stats(0, 0), busy[:1], long); !rd.Hold || rd.Expected != nil {
		t.Fatalf("one week judged: %+v", rd)
	}
	// Weeks before the MCP existed, with no items, are not history; with
	// items they are (data sent before the MCP row was made, say).
	created := now.Add(-10 * 24 * time.Hour)
	empty := []map[string]analytics.WindowStat{stats(1000, 0), nil, nil, nil}
	if rd := rule(MetricCalls, CompLT).ReadSeasonal(now, stats(0, 0), empty, created); !rd.Hold {
		t.Fatalf("weeks before the MCP counted: %+v", rd)
	}
	if rd := rule(MetricCalls, CompLT).ReadSeasonal(now, stats(0, 0), busy, created); rd.Hold || !rd.Breached {
		t.Fatalf("weeks with items before creation ignored: %+v", rd)
	}
	// Quiet weeks after the MCP existed are history: zero is usual then.
	quiet := []map[string]analytics.WindowStat{nil, nil, nil, nil}
	if rd := rule(MetricCalls, CompGT).ReadSeasonal(now, stats(1, 0), quiet, long); rd.Hold || rd.Breached {
		t.Fatalf("one call on an always-silent hour: %+v", rd)
	}
	if rd := rule(MetricCalls, CompGT).ReadSeasonal(now, stats(1000, 0), quiet, long); !rd.Breached {
		t.Fatalf("a peak on an always-silent hour: %+v", rd)
	}

	// min_calls holds an error_rate rule on a thin window.
	er := rule(MetricErrorRate, CompGT)
	er.MinCalls = 100
	if rd := er.ReadSeasonal(now, stats(10, 9), busy, long); !rd.Hold || rd.Breached {
		t.Fatalf("min_calls not respected: %+v", rd)
	}
	if rd := er.ReadSeasonal(now, stats(1000, 70), busy, long); !rd.Breached {
		t.Fatalf("7%% errors against a usual 0.5%% did not breach: %+v", rd)
	}
}

func TestSeasonalMessages(t *testing.T) {
	b := BaselineSeasonal
	r := Rule{Name: "Search errors", Metric: MetricErrorRate, Comparator: CompGT, WindowMinutes: 10,
		Baseline: &b, Channels: []string{ChannelInApp}}
	if got, want := r.ExpectedText(Band{Low: 0.004, High: 0.011}, 0.07), "expected 0.4%–1.1% at this hour, got 7%"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	rd := Reading{Value: 0.07, HasValue: true, Breached: true, Expected: &Band{Low: 0.004, High: 0.011}}
	ds := PlanTransition(r, true, rd, time.Now(), []Member{{UserID: "u1", Prefs: Preferences{InApp: true, Email: true}}}, nil)
	if len(ds) != 1 {
		t.Fatalf("deliveries %+v", ds)
	}
	d := ds[0]
	if d.Title != "Firing: Search errors (error rate 7%)" ||
		d.Body != "Over the last 10 minutes: error rate expected 0.4%–1.1% at this hour, got 7% (rule: above the usual for this hour of the week (medium sensitivity))." {
		t.Fatalf("title %q body %q", d.Title, d.Body)
	}
}
