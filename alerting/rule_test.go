package alerting

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func strp(s string) *string { return &s }

func validCreate() RuleCreate {
	return RuleCreate{Name: "Search errors", Metric: MetricErrorRate, Comparator: CompGT,
		Threshold: 0.05, WindowMinutes: 5, Channels: []string{ChannelInApp, ChannelSlack}}
}

// wantField asserts err is EINVALID on field (or nil when field is "").
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var e *telemetry.Error
	if !errors.As(err, &e) || e.Code != telemetry.EINVALID || e.Field != field {
		t.Fatalf("error = %v, want %s on %s", err, telemetry.EINVALID, field)
	}
	if e.Message == "" {
		t.Fatal("empty message")
	}
}

func TestRuleCreateValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*RuleCreate)
		field string // "" = valid
	}{
		{"valid", func(*RuleCreate) {}, ""},
		{"every metric and comparator", func(c *RuleCreate) { c.Metric, c.Comparator, c.Threshold = MetricP95, CompLE, 800 }, ""},
		{"calls below", func(c *RuleCreate) { c.Metric, c.Comparator, c.Threshold = MetricCalls, CompLT, 1 }, ""},
		{"errors at least", func(c *RuleCreate) { c.Metric, c.Comparator, c.Threshold = MetricErrors, CompGE, 10 }, ""},
		{"tool", func(c *RuleCreate) { c.Tool = strp("search_docs") }, ""},
		{"tool of 256 runes", func(c *RuleCreate) { c.Tool = strp(strings.Repeat("é", 256)) }, ""},
		{"name of 200 runes", func(c *RuleCreate) { c.Name = strings.Repeat("ü", 200) }, ""},
		{"window 1", func(c *RuleCreate) { c.WindowMinutes = 1 }, ""},
		{"window 1440", func(c *RuleCreate) { c.WindowMinutes = 1440 }, ""},
		{"threshold 0", func(c *RuleCreate) { c.Threshold = 0 }, ""},
		{"error_rate threshold 1", func(c *RuleCreate) { c.Threshold = 1 }, ""},
		{"all four channels", func(c *RuleCreate) { c.Channels = []string{"email", "discord", "in_app", "slack"} }, ""},
		{"disabled", func(c *RuleCreate) { c.Enabled = new(bool) }, ""},

		{"empty name", func(c *RuleCreate) { c.Name = "" }, "body.name"},
		{"blank name", func(c *RuleCreate) { c.Name = " \t" }, "body.name"},
		{"name of 201 runes", func(c *RuleCreate) { c.Name = strings.Repeat("ü", 201) }, "body.name"},
		{"name with NUL", func(c *RuleCreate) { c.Name = "a\x00b" }, "body.name"},
		{"name not UTF-8", func(c *RuleCreate) { c.Name = "a\xffb" }, "body.name"},
		{"unknown metric", func(c *RuleCreate) { c.Metric = "p999_ms" }, "body.metric"},
		{"p50", func(c *RuleCreate) { c.Metric, c.Threshold = MetricP50, 200 }, ""},
		{"p99", func(c *RuleCreate) { c.Metric, c.Threshold = MetricP99, 2000 }, ""},
		{"sessions", func(c *RuleCreate) { c.Metric, c.Comparator, c.Threshold = MetricSessions, CompLT, 1 }, ""},
		{"users", func(c *RuleCreate) { c.Metric, c.Threshold = MetricUsers, 100 }, ""},
		{"notify on resolve", func(c *RuleCreate) { c.NotifyOnResolve = boolp(true) }, ""},
		{"min_calls 0", func(c *RuleCreate) { c.MinCalls = intp(0) }, ""},
		{"min_calls 20", func(c *RuleCreate) { c.MinCalls = intp(20) }, ""},
		{"min_calls at its bound", func(c *RuleCreate) { c.MinCalls = intp(MaxMinCalls) }, ""},
		{"negative min_calls", func(c *RuleCreate) { c.MinCalls = intp(-1) }, "body.min_calls"},
		{"min_calls over its bound", func(c *RuleCreate) { c.MinCalls = intp(MaxMinCalls + 1) }, "body.min_calls"},
		{"baseline week_ago", func(c *RuleCreate) { c.Baseline = strp(BaselineWeekAgo) }, ""},
		{"baseline ratio above 1 for error_rate", func(c *RuleCreate) { c.Baseline, c.Threshold = strp(BaselineWeekAgo), 3 }, ""},
		{"unknown baseline", func(c *RuleCreate) { c.Baseline = strp("day_ago") }, "body.baseline"},
		{"empty baseline", func(c *RuleCreate) { c.Baseline = strp("") }, "body.baseline"},
		{"snooze in the future", func(c *RuleCreate) { c.SnoozedUntil = timep(evalNow.Add(time.Hour)) }, ""},
		{"snooze in the past", func(c *RuleCreate) { c.SnoozedUntil = timep(evalNow.Add(-time.Hour)) }, ""},
		{"snooze beyond year 9999", func(c *RuleCreate) { c.SnoozedUntil = timep(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) }, "body.snoozed_until"},
		{"empty metric", func(c *RuleCreate) { c.Metric = "" }, "body.metric"},
		{"empty tool", func(c *RuleCreate) { c.Tool = strp("") }, "body.tool"},
		{"tool of 257 runes", func(c *RuleCreate) { c.Tool = strp(strings.Repeat("a", 257)) }, "body.tool"},
		{"tool with NUL", func(c *RuleCreate) { c.Tool = strp("\x00") }, "body.tool"},
		{"unknown comparator", func(c *RuleCreate) { c.Comparator = "==" }, "body.comparator"},
		{"spelled comparator", func(c *RuleCreate) { c.Comparator = "gt" }, "body.comparator"},
		{"NaN threshold", func(c *RuleCreate) { c.Threshold = math.NaN() }, "body.threshold"},
		{"infinite threshold", func(c *RuleCreate) { c.Metric, c.Threshold = MetricCalls, math.Inf(1) }, "body.threshold"},
		{"negative threshold", func(c *RuleCreate) { c.Metric, c.Threshold = MetricErrors, -1 }, "body.threshold"},
		{"error_rate as a percentage", func(c *RuleCreate) { c.Threshold = 5 }, "body.threshold"},
		{"window 0", func(c *RuleCreate) { c.WindowMinutes = 0 }, "body.window_minutes"},
		{"window 1441", func(c *RuleCreate) { c.WindowMinutes = 1441 }, "body.window_minutes"},
		{"negative window", func(c *RuleCreate) { c.WindowMinutes = -5 }, "body.window_minutes"},
		{"no channels", func(c *RuleCreate) { c.Channels = nil }, "body.channels"},
		{"empty channels", func(c *RuleCreate) { c.Channels = []string{} }, "body.channels"},
		{"unknown channel", func(c *RuleCreate) { c.Channels = []string{"in_app", "sms"} }, "body.channels[1]"},
		{"upper-case channel", func(c *RuleCreate) { c.Channels = []string{"Slack"} }, "body.channels[0]"},
		{"duplicate channel", func(c *RuleCreate) { c.Channels = []string{"slack", "in_app", "slack"} }, "body.channels[2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCreate()
			tt.edit(&c)
			wantField(t, c.Validate(), tt.field)
		})
	}
}

func TestRuleCreateRule(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	c := validCreate()
	c.Tool = strp("search_docs")
	r := c.Rule("r1", "m1", now)
	if !r.Enabled || r.State != StateOK || r.LastFiredAt != nil || r.ID != "r1" || r.MCPID != "m1" {
		t.Fatalf("new rule = %+v", r)
	}
	if r.CreatedAt.Location() != time.UTC || !r.CreatedAt.Equal(now) {
		t.Errorf("created_at = %v, want %v in UTC", r.CreatedAt, now)
	}
	c.Channels[0], *c.Tool = "email", "other"
	if r.Channels[0] != ChannelInApp || *r.Tool != "search_docs" {
		t.Error("the rule shares memory with the create body")
	}
	c.Enabled = new(bool)
	if c.Rule("r2", "m1", now).Enabled {
		t.Error("enabled: false was ignored")
	}
}

func TestRuleJSON(t *testing.T) {
	r := validCreate().Rule("r1", "m1", time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"baseline", "channels", "comparator", "created_at", "enabled", "error_kind", "id", "last_fired_at", "mcp_id", "metric",
		"min_calls", "min_severity", "name", "notify_on_resolve", "renotify_minutes", "sensitivity", "severity", "snoozed_until", "state", "threshold", "tool", "window_minutes"}
	if got := jsonKeys(t, b); !reflect.DeepEqual(got, want) {
		t.Errorf("keys = %v, want %v", got, want)
	}
	for _, part := range []string{`"tool":null`, `"last_fired_at":null`, `"baseline":null`, `"snoozed_until":null`,
		`"min_calls":0`, `"notify_on_resolve":false`, `"created_at":"2026-11-20T10:00:00Z"`, `"state":"ok"`} {
		if !strings.Contains(string(b), part) {
			t.Errorf("%s lacks %s", b, part)
		}
	}
}

func TestCompare(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		cmp        string
		value, thr float64
		want       bool
	}{
		{CompGT, 2, 1, true}, {CompGT, 1, 1, false}, {CompGT, 0, 1, false},
		{CompGE, 2, 1, true}, {CompGE, 1, 1, true}, {CompGE, 0, 1, false},
		{CompLT, 0, 1, true}, {CompLT, 1, 1, false}, {CompLT, 2, 1, false},
		{CompLE, 0, 1, true}, {CompLE, 1, 1, true}, {CompLE, 2, 1, false},
		{"==", 1, 1, false}, {"", 1, 0, false},
		{CompGT, nan, 0, false}, {CompLT, nan, 0, false}, {CompGE, 0, nan, false},
	}
	for _, tt := range tests {
		if got := Compare(tt.cmp, tt.value, tt.thr); got != tt.want {
			t.Errorf("Compare(%q, %v, %v) = %v, want %v", tt.cmp, tt.value, tt.thr, got, tt.want)
		}
	}
}

func TestTransition(t *testing.T) {
	tests := []struct {
		state           string
		breached        bool
		next            string
		fired, resolved bool
	}{
		{StateOK, false, StateOK, false, false},
		{StateOK, true, StateFiring, true, false},
		{StateFiring, true, StateFiring, false, false}, // does not fire again while firing
		{StateFiring, false, StateOK, false, true},
		{"", true, StateFiring, true, false}, // unknown state counts as ok
		{"bogus", false, StateOK, false, false},
	}
	for _, tt := range tests {
		next, fired, resolved := Transition(tt.state, tt.breached)
		if next != tt.next || fired != tt.fired || resolved != tt.resolved {
			t.Errorf("Transition(%q, %v) = %q, %v, %v; want %q, %v, %v",
				tt.state, tt.breached, next, fired, resolved, tt.next, tt.fired, tt.resolved)
		}
	}
}

func TestRuleBreached(t *testing.T) {
	tests := []struct {
		name     string
		metric   string
		cmp      string
		thr      float64
		value    float64
		hasValue bool
		want     bool
	}{
		{"p95 above", MetricP95, CompGT, 500, 812, true, true},
		{"p95 no data is not breached by >", MetricP95, CompGT, 500, 0, false, false},
		{"p95 no data is not breached by <", MetricP95, CompLT, 500, 0, false, false},
		{"silent MCP breaches calls < 1", MetricCalls, CompLT, 1, 0, true, true},
		{"error rate 0 with no calls", MetricErrorRate, CompGT, 0.05, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Rule{Metric: tt.metric, Comparator: tt.cmp, Threshold: tt.thr}
			if got := r.Breached(tt.value, tt.hasValue); got != tt.want {
				t.Errorf("Breached = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRuleWindow(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	from, to := Rule{WindowMinutes: 90}.Window(now)
	if !to.Equal(now) || !from.Equal(now.Add(-90*time.Minute)) {
		t.Errorf("Window = %v, %v", from, to)
	}
}

func firingRule() Rule {
	fired := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	r := validCreate().Rule("r1", "m1", fired.Add(-time.Hour))
	r.Tool = strp("search_docs")
	r.State, r.LastFiredAt = StateFiring, &fired
	return r
}

func TestRuleUpdateApply(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	b := func(v bool) *bool { return &v }
	tests := []struct {
		name  string
		upd   RuleUpdate
		field string
		check func(t *testing.T, r Rule)
	}{
		{"empty update keeps everything", RuleUpdate{}, "", func(t *testing.T, r Rule) {
			if !reflect.DeepEqual(r, firingRule()) {
				t.Errorf("changed: %+v", r)
			}
		}},
		{"rename keeps firing", RuleUpdate{Name: strp("Renamed")}, "", func(t *testing.T, r Rule) {
			if r.Name != "Renamed" || r.State != StateFiring || r.LastFiredAt == nil {
				t.Errorf("%+v", r)
			}
		}},
		{"channels change keeps firing", RuleUpdate{Channels: []string{ChannelEmail}}, "", func(t *testing.T, r Rule) {
			if !reflect.DeepEqual(r.Channels, []string{ChannelEmail}) || r.State != StateFiring {
				t.Errorf("%+v", r)
			}
		}},
		{"threshold change resets state", RuleUpdate{Threshold: f(0.1)}, "", func(t *testing.T, r Rule) {
			if r.Threshold != 0.1 || r.State != StateOK || r.LastFiredAt == nil {
				t.Errorf("%+v", r)
			}
		}},
		{"same threshold keeps state", RuleUpdate{Threshold: f(0.05)}, "", func(t *testing.T, r Rule) {
			if r.State != StateFiring {
				t.Errorf("%+v", r)
			}
		}},
		{"window change resets state", RuleUpdate{WindowMinutes: i(15)}, "", func(t *testing.T, r Rule) {
			if r.WindowMinutes != 15 || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"comparator change resets state", RuleUpdate{Comparator: strp(CompGE)}, "", func(t *testing.T, r Rule) {
			if r.Comparator != CompGE || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"disabling resets state", RuleUpdate{Enabled: b(false)}, "", func(t *testing.T, r Rule) {
			if r.Enabled || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"tool null means all tools", RuleUpdate{Tool: NullableString{Set: true}}, "", func(t *testing.T, r Rule) {
			if r.Tool != nil || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"tool changed", RuleUpdate{Tool: NullableString{Set: true, Value: strp("fetch")}}, "", func(t *testing.T, r Rule) {
			if r.Tool == nil || *r.Tool != "fetch" || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"metric and threshold together", RuleUpdate{Metric: strp(MetricP95), Threshold: f(800)}, "", func(t *testing.T, r Rule) {
			if r.Metric != MetricP95 || r.Threshold != 800 {
				t.Errorf("%+v", r)
			}
		}},
		{"error_rate threshold above 1", RuleUpdate{Threshold: f(50)}, "body.threshold", nil},
		{"notify_on_resolve keeps firing", RuleUpdate{NotifyOnResolve: b(true)}, "", func(t *testing.T, r Rule) {
			if !r.NotifyOnResolve || r.State != StateFiring {
				t.Errorf("%+v", r)
			}
		}},
		{"snooze keeps firing", RuleUpdate{SnoozedUntil: NullableTime{Set: true, Value: timep(evalNow.Add(time.Hour))}}, "", func(t *testing.T, r Rule) {
			if r.SnoozedUntil == nil || !r.SnoozedUntil.Equal(evalNow.Add(time.Hour)) || r.State != StateFiring || !r.Snoozed(evalNow) {
				t.Errorf("%+v", r)
			}
		}},
		{"a snooze in the past is cleared", RuleUpdate{SnoozedUntil: NullableTime{Set: true, Value: timep(evalNow.Add(-time.Second))}}, "", func(t *testing.T, r Rule) {
			if r.SnoozedUntil != nil || r.State != StateFiring {
				t.Errorf("%+v", r)
			}
		}},
		{"min_calls change resets state", RuleUpdate{MinCalls: i(10)}, "", func(t *testing.T, r Rule) {
			if r.MinCalls != 10 || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"baseline set resets state and allows a ratio", RuleUpdate{Baseline: NullableString{Set: true, Value: strp(BaselineWeekAgo)}, Threshold: f(2)}, "", func(t *testing.T, r Rule) {
			if r.Baseline == nil || *r.Baseline != BaselineWeekAgo || r.Threshold != 2 || r.State != StateOK {
				t.Errorf("%+v", r)
			}
		}},
		{"baseline null on a rule without one keeps firing", RuleUpdate{Baseline: NullableString{Set: true}}, "", func(t *testing.T, r Rule) {
			if r.Baseline != nil || r.State != StateFiring {
				t.Errorf("%+v", r)
			}
		}},
		{"bad baseline", RuleUpdate{Baseline: NullableString{Set: true, Value: strp("month_ago")}}, "body.baseline", nil},
		{"negative min_calls", RuleUpdate{MinCalls: i(-3)}, "body.min_calls", nil},
		{"empty channels", RuleUpdate{Channels: []string{}}, "body.channels", nil},
		{"empty name", RuleUpdate{Name: strp("")}, "body.name", nil},
		{"bad metric", RuleUpdate{Metric: strp("latency")}, "body.metric", nil},
		{"empty tool", RuleUpdate{Tool: NullableString{Set: true, Value: strp("")}}, "body.tool", nil},
		{"window too large", RuleUpdate{WindowMinutes: i(2000)}, "body.window_minutes", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := firingRule()
			got, err := tt.upd.Apply(orig, evalNow)
			wantField(t, err, tt.field)
			if !reflect.DeepEqual(orig, firingRule()) {
				t.Fatal("Apply changed its input")
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func TestRuleUpdateMetricCheckedAgainstKeptThreshold(t *testing.T) {
	r := firingRule()
	r.Metric, r.Threshold = MetricP95, 800
	_, err := RuleUpdate{Metric: strp(MetricErrorRate)}.Apply(r, evalNow)
	wantField(t, err, "body.threshold")
}

func TestRuleUpdateJSON(t *testing.T) {
	tests := []struct {
		body    string
		toolSet bool
		tool    *string
	}{
		{`{}`, false, nil},
		{`{"name":"x"}`, false, nil},
		{`{"tool":null}`, true, nil},
		{`{"tool":"search"}`, true, strp("search")},
	}
	for _, tt := range tests {
		var u RuleUpdate
		if err := json.Unmarshal([]byte(tt.body), &u); err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if u.Tool.Set != tt.toolSet || !equalStringPtr(u.Tool.Value, tt.tool) {
			t.Errorf("%s: tool = %+v", tt.body, u.Tool)
		}
		out, _ := json.Marshal(u)
		if tt.body != `{"name":"x"}` && string(out) != tt.body {
			t.Errorf("%s marshals back as %s", tt.body, out)
		}
	}
	var u RuleUpdate
	if err := json.Unmarshal([]byte(`{"tool":5}`), &u); err == nil {
		t.Error("a numeric tool was accepted")
	}
}

func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestRuleValue(t *testing.T) {
	p95 := 240.5
	stats := map[string]analytics.WindowStat{
		"":            {Calls: 40, Errors: 10, P95Ms: &p95, P50Ms: fp(120), P99Ms: fp(990), Sessions: 7, Users: 5},
		"search_docs": {Calls: 8, Errors: 2, Sessions: 3, Users: 2},
	}
	cases := []struct {
		name   string
		metric string
		tool   *string
		stats  map[string]analytics.WindowStat
		value  float64
		ok     bool
	}{
		{"calls of the MCP", MetricCalls, nil, stats, 40, true},
		{"errors of the MCP", MetricErrors, nil, stats, 10, true},
		{"error rate of the MCP", MetricErrorRate, nil, stats, 0.25, true},
		{"p95 of the MCP", MetricP95, nil, stats, 240.5, true},
		{"calls of a tool", MetricCalls, strp("search_docs"), stats, 8, true},
		{"error rate of a tool", MetricErrorRate, strp("search_docs"), stats, 0.25, true},
		{"p95 of a tool without durations has no value", MetricP95, strp("search_docs"), stats, 0, false},
		{"unknown tool counts zero", MetricCalls, strp("other"), stats, 0, true},
		{"error rate with no calls is 0", MetricErrorRate, nil, nil, 0, true},
		{"errors with no data is 0", MetricErrors, nil, nil, 0, true},
		{"p95 with no data has no value", MetricP95, nil, nil, 0, false},
		{"unknown metric has no value", "bogus", nil, stats, 0, false},
		{"p50 of the MCP", MetricP50, nil, stats, 120, true},
		{"p99 of the MCP", MetricP99, nil, stats, 990, true},
		{"p99 without durations has no value", MetricP99, strp("search_docs"), stats, 0, false},
		{"sessions of the MCP", MetricSessions, nil, stats, 7, true},
		{"users of a tool", MetricUsers, strp("search_docs"), stats, 2, true},
		{"sessions with no data is 0", MetricSessions, nil, nil, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Rule{Metric: tc.metric, Tool: tc.tool}
			v, ok := r.Value(tc.stats)
			if v != tc.value || ok != tc.ok {
				t.Fatalf("Value = %v, %v; want %v, %v", v, ok, tc.value, tc.ok)
			}
		})
	}
}

func boolp(v bool) *bool           { return &v }
func intp(v int) *int              { return &v }
func fp(v float64) *float64        { return &v }
func timep(t time.Time) *time.Time { return &t }

func TestRuleRead(t *testing.T) {
	week := strp(BaselineWeekAgo)
	cases := []struct {
		name      string
		rule      Rule
		cur, prev map[string]analytics.WindowStat
		want      Reading
	}{
		{"plain breach", Rule{Metric: MetricErrors, Comparator: CompGT, Threshold: 0},
			map[string]analytics.WindowStat{"": {Calls: 3, Errors: 1}}, nil,
			Reading{Value: 1, HasValue: true, Calls: 3, Breached: true}},
		{"under min_calls an error rate holds", Rule{Metric: MetricErrorRate, Comparator: CompGT, Threshold: 0.1, MinCalls: 10},
			map[string]analytics.WindowStat{"": {Calls: 3, Errors: 1}}, nil,
			Reading{Value: 1.0 / 3, HasValue: true, Calls: 3, Hold: true}},
		{"at min_calls it is", Rule{Metric: MetricErrorRate, Comparator: CompGT, Threshold: 0.1, MinCalls: 3},
			map[string]analytics.WindowStat{"": {Calls: 3, Errors: 1}}, nil,
			Reading{Value: 1.0 / 3, HasValue: true, Calls: 3, Breached: true}},
		{"min_calls guards p95", Rule{Metric: MetricP95, Comparator: CompGT, Threshold: 100, MinCalls: 5},
			map[string]analytics.WindowStat{"": {Calls: 2, P95Ms: fp(500)}}, nil,
			Reading{Value: 500, HasValue: true, Calls: 2, Hold: true}},
		{"min_calls does not apply to calls", Rule{Metric: MetricCalls, Comparator: CompLT, Threshold: 5, MinCalls: 10},
			map[string]analytics.WindowStat{"": {Calls: 2}}, nil,
			Reading{Value: 2, HasValue: true, Calls: 2, Breached: true}},
		{"min_calls counts the tool's calls", Rule{Metric: MetricErrors, Tool: strp("t"), Comparator: CompGT, Threshold: 0, MinCalls: 2},
			map[string]analytics.WindowStat{"": {Calls: 50, Errors: 1}, "t": {Calls: 1, Errors: 1}}, nil,
			Reading{Value: 1, HasValue: true, Calls: 1, Hold: true}},
		{"week_ago ratio below half", Rule{Metric: MetricCalls, Comparator: CompLT, Threshold: 0.5, Baseline: week},
			map[string]analytics.WindowStat{"": {Calls: 40}}, map[string]analytics.WindowStat{"": {Calls: 100}},
			Reading{Value: 0.4, HasValue: true, Baseline: fp(100), Calls: 40, Breached: true}},
		{"week_ago ratio above", Rule{Metric: MetricCalls, Comparator: CompLT, Threshold: 0.5, Baseline: week},
			map[string]analytics.WindowStat{"": {Calls: 60}}, map[string]analytics.WindowStat{"": {Calls: 100}},
			Reading{Value: 0.6, HasValue: true, Baseline: fp(100), Calls: 60}},
		{"week_ago of zero holds", Rule{Metric: MetricCalls, Comparator: CompLT, Threshold: 0.5, Baseline: week},
			map[string]analytics.WindowStat{"": {Calls: 0}}, nil,
			Reading{Baseline: fp(0), Calls: 0, Hold: true}},
		{"week_ago without a p95 holds", Rule{Metric: MetricP95, Comparator: CompGT, Threshold: 2, Baseline: week},
			map[string]analytics.WindowStat{"": {Calls: 5, P95Ms: fp(300)}}, map[string]analytics.WindowStat{"": {Calls: 5}},
			Reading{Calls: 5, Hold: true}},
		{"week_ago p95 doubled", Rule{Metric: MetricP95, Comparator: CompGT, Threshold: 2, Baseline: week},
			map[string]analytics.WindowStat{"": {Calls: 5, P95Ms: fp(300)}}, map[string]analytics.WindowStat{"": {Calls: 5, P95Ms: fp(100)}},
			Reading{Value: 3, HasValue: true, Baseline: fp(100), Calls: 5, Breached: true}},
		{"min_calls before baseline", Rule{Metric: MetricErrors, Comparator: CompGT, Threshold: 1, MinCalls: 10, Baseline: week},
			map[string]analytics.WindowStat{"": {Calls: 4, Errors: 4}}, nil,
			Reading{Value: 4, HasValue: true, Calls: 4, Hold: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rule.Read(tc.cur, tc.prev)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Read = %+v (baseline %v), want %+v (baseline %v)", got, deref(got.Baseline), tc.want, deref(tc.want.Baseline))
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestSnoozeEnded(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	fired, until := now.Add(-time.Hour), now.Add(-time.Minute)
	breached := Reading{Breached: true, HasValue: true}
	base := Rule{State: StateFiring, SnoozedUntil: &until, LastFiredAt: &fired}
	cases := []struct {
		name string
		edit func(r *Rule, rd *Reading)
		want bool
	}{
		{"fired while snoozed, ended, still breached", func(*Rule, *Reading) {}, true},
		{"still snoozed", func(r *Rule, _ *Reading) { r.SnoozedUntil = timep(now.Add(time.Minute)) }, false},
		{"no snooze", func(r *Rule, _ *Reading) { r.SnoozedUntil = nil }, false},
		{"fired after the snooze ended", func(r *Rule, _ *Reading) { r.LastFiredAt = timep(now.Add(-time.Second)) }, false},
		{"resolved", func(r *Rule, _ *Reading) { r.State = StateOK }, false},
		{"no longer breached", func(_ *Rule, rd *Reading) { rd.Breached = false }, false},
		{"a reading that holds", func(_ *Rule, rd *Reading) { rd.Hold = true }, false},
	}
	for _, c := range cases {
		r, rd := base, breached
		c.edit(&r, &rd)
		if got := r.SnoozeEnded(now, rd); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRuleErrorKind: error_kind is a kind, on errors and error_rate only;
// with it those metrics count that kind's errors, and the failure metrics
// read their figures.
func TestRuleErrorKind(t *testing.T) {
	kind := func(k string) *string { return &k }
	for _, c := range []struct {
		metric string
		kind   *string
		ok     bool
	}{
		{MetricErrors, kind("unknown_tool"), true},
		{MetricErrorRate, kind("invalid_params"), true},
		{MetricErrorRate, nil, true},
		{MetricCalls, kind("timeout"), false},
		{MetricErrors, kind("crashed"), false},
		{MetricErrors, kind(""), false},
		{MetricUnknownToolCalls, nil, true},
		{MetricRepeatedCalls, nil, true},
	} {
		rc := validCreate()
		rc.Metric, rc.ErrorKind, rc.Threshold = c.metric, c.kind, 0.5
		if err := rc.Validate(); (err == nil) != c.ok {
			t.Errorf("%s %v: %v, want ok %v", c.metric, c.kind, err, c.ok)
		}
	}
	stats := map[string]analytics.WindowStat{"": {Calls: 10, Errors: 4, RepeatedCalls: 3, UnknownToolCalls: 2,
		ErrorKinds: map[string]int64{"unknown_tool": 1, "invalid_params": 3}}}
	for _, c := range []struct {
		metric string
		kind   *string
		want   float64
	}{
		{MetricErrors, nil, 4},
		{MetricErrors, kind("invalid_params"), 3},
		{MetricErrorRate, kind("unknown_tool"), 0.1},
		{MetricErrors, kind("timeout"), 0},
		{MetricUnknownToolCalls, nil, 2}, // unknown_tool items and calls of unlisted names
		{MetricRepeatedCalls, nil, 3},
	} {
		r := Rule{Metric: c.metric, ErrorKind: c.kind}
		if v, ok := r.Value(stats); !ok || v != c.want {
			t.Errorf("%s %v: %v %v, want %v", c.metric, c.kind, v, ok, c.want)
		}
	}
}
