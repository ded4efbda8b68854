package alerting

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func TestProbeCreateValidate(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		c     ProbeCreate
		field string
	}{
		{ProbeCreate{URL: "https://mcp.example.com/mcp"}, ""},
		{ProbeCreate{URL: "ftp://mcp.example.com/"}, "body.url"},
		{ProbeCreate{URL: "https://user:pw@mcp.example.com/"}, "body.url"},
		{ProbeCreate{URL: "/mcp"}, "body.url"},
		{ProbeCreate{URL: "https://x/" + strings.Repeat("a", 2048)}, "body.url"},
		{ProbeCreate{URL: "https://x/", IntervalSeconds: n(29)}, "body.interval_seconds"},
		{ProbeCreate{URL: "https://x/", IntervalSeconds: n(3601)}, "body.interval_seconds"},
		{ProbeCreate{URL: "https://x/", TimeoutMs: n(999)}, "body.timeout_ms"},
		{ProbeCreate{URL: "https://x/", Headers: map[string]string{"Mcp-Session-Id": "x"}}, "body.headers.Mcp-Session-Id"},
		{ProbeCreate{URL: "https://x/", Headers: map[string]string{"Bad Name": "x"}}, "body.headers.Bad Name"},
		{ProbeCreate{URL: "https://x/", Headers: map[string]string{"X-A": "a\r\nB: c"}}, "body.headers.X-A"},
		{ProbeCreate{URL: "https://x/", Headers: map[string]string{"X-A": "1", "x-a": "2"}}, "body.headers"},
	} {
		err := tc.c.Validate()
		var e *telemetry.Error
		if tc.field == "" {
			if err != nil || *tc.c.IntervalSeconds != 60 || *tc.c.TimeoutMs != 10000 || !*tc.c.Enabled {
				t.Errorf("%+v: %v", tc.c, err)
			}
			continue
		}
		if !asError(err, &e) || e.Code != telemetry.EINVALID || !strings.HasPrefix(e.Field, tc.field) {
			t.Errorf("%+v: %v, want invalid at %s", tc.c.URL, err, tc.field)
		}
	}
}

func asError(err error, e **telemetry.Error) bool {
	te, ok := err.(*telemetry.Error)
	*e = te
	return ok
}

func TestProbeHintsAndNotes(t *testing.T) {
	h := ProbeHeaderHints(map[string]string{"authorization": "Bearer sk-probe-12345678", "x-short": "abc"})
	if h["Authorization"] != "••••••••5678" || h["X-Short"] != "••••••••" {
		t.Fatalf("hints %v", h)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if w := CertWarning(now.Add(3*24*time.Hour+time.Hour), now); !strings.Contains(w, "expires in 3 days") {
		t.Fatalf("warning %q", w)
	}
	if w := CertWarning(now.Add(15*24*time.Hour), now); w != "" {
		t.Fatalf("warning %q for 15 days", w)
	}
	down := &analytics.ProbeStat{Status: ProbeDown, Failures: 3, DownSince: now.Add(-2 * time.Hour), LastError: "connect: connection refused"}
	if n := ProbeNote(down, now); n != "down since 10:00 UTC: connection refused" {
		t.Fatalf("note %q", n)
	}
	if n := ProbeNote(&analytics.ProbeStat{Status: ProbeUp}, now); n != "quiet: the server answers, nobody is calling" {
		t.Fatalf("note %q", n)
	}
	if n := ProbeNote(&analytics.ProbeStat{Status: ProbeUnknown}, now); n != "" {
		t.Fatalf("note %q", n)
	}
	// probe_down reads the failures; a calls < rule carries the probe.
	r := Rule{Metric: MetricProbeDown, Comparator: CompGE, Threshold: 2}
	if rd := r.Read(map[string]analytics.WindowStat{"": {Probe: down}}, nil); !rd.Breached || rd.Value != 3 {
		t.Fatalf("probe_down reading %+v", rd)
	}
	if rd := r.Read(map[string]analytics.WindowStat{}, nil); rd.Breached || rd.Value != 0 {
		t.Fatalf("probe_down without a probe %+v", rd)
	}
	calls := Rule{Name: "quiet", Metric: MetricCalls, Comparator: CompLT, Threshold: 1, WindowMinutes: 5, Channels: []string{ChannelInApp}}
	rd := calls.Read(map[string]analytics.WindowStat{"": {Probe: down}}, nil)
	ds := withProbeNote(PlanFanOut(calls, rd.Value, []Member{{UserID: "u1", Prefs: DefaultPreferences()}}, nil), rd, now)
	if len(ds) != 1 || !strings.HasSuffix(ds[0].Body, "Probe: down since 10:00 UTC: connection refused.") {
		t.Fatalf("deliveries %+v", ds)
	}
	for _, c := range []RuleCreate{{Name: "x", Metric: MetricProbeDown, Comparator: CompGE, Threshold: 2, WindowMinutes: 1, Channels: []string{ChannelInApp}, Tool: &r.Name}} {
		if err := c.Validate(); telemetry.ErrorCode(err) != telemetry.EINVALID {
			t.Fatalf("probe_down with a tool: %v", err)
		}
	}
}

// TestMergeDownBuckets: steps that follow each other make one period,
// a gap starts another.
func TestMergeDownBuckets(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 3, 10, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	got := MergeDownBuckets([]DownBucket{
		{Start: at(0), First: at(2), Last: at(4), Checks: 3, Error: "connect: refused"},
		{Start: at(5), First: at(5), Last: at(9), Checks: 5},
		{Start: at(10), First: at(10), Last: at(11), Checks: 2},
		{Start: at(30), First: at(31), Last: at(31), Checks: 1, Error: "timeout: 10s"},
	})
	if len(got) != 2 || !got[0].From.Equal(at(2)) || !got[0].To.Equal(at(11)) || got[0].Checks != 10 || got[0].Error != "connect: refused" ||
		!got[1].From.Equal(at(31)) || !got[1].To.Equal(at(31)) || got[1].Error != "timeout: 10s" {
		t.Fatalf("periods %+v", got)
	}
	if len(MergeDownBuckets(nil)) != 0 {
		t.Fatal("periods of nothing")
	}
}
