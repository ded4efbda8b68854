package analytics

import (
	"math"
	"testing"
	"time"
)

func TestTwoProportionZ(t *testing.T) {
	for _, c := range []struct {
		x1, n1, x2, n2 int64
		want           float64
	}{
		// p1 .10, p2 .20, pooled .15: se = sqrt(.15 × .85 × (1/100 + 1/100))
		// = sqrt(.00255) = .0504975; z = .10 / .0504975 = 1.98030.
		{10, 100, 20, 100, 1.98030},
		// p1 .025, p2 .05, pooled .0375: se = sqrt(.0375 × .9625 × .01)
		// = .0189984; z = .025 / .0189984 = 1.31590 (not significant).
		{5, 200, 10, 200, 1.31590},
		// Unequal sizes: p1 .02 (20/1000), p2 .05 (10/200), pooled 30/1200
		// = .025: se = sqrt(.025 × .975 × (.001 + .005)) = .0120934;
		// z = .03 / .0120934 = 2.48069.
		{20, 1000, 10, 200, 2.48069},
		// Fewer errors in the head: the sign turns.
		{20, 100, 10, 100, -1.98030},
		// No errors anywhere, every call an error, an empty side: 0.
		{0, 100, 0, 100, 0}, {100, 100, 50, 50, 0}, {0, 0, 5, 10, 0},
	} {
		if got := TwoProportionZ(c.x1, c.n1, c.x2, c.n2); math.Abs(got-c.want) > 5e-5 {
			t.Errorf("z(%d/%d, %d/%d) = %.5f, want %.5f", c.x1, c.n1, c.x2, c.n2, got, c.want)
		}
	}
}

func fig(calls, errors int64, p95 float64, kinds map[string]int64) WindowFigures {
	f := WindowFigures{Calls: calls, Errors: errors, Durations: calls, ErrorKinds: kinds}
	if p95 > 0 {
		f.P95Ms = &p95
	}
	return f
}

func win(total WindowFigures, tools map[string]WindowFigures) *ReleaseWindow {
	return &ReleaseWindow{Total: total, Tools: tools}
}

func TestCompareReleases(t *testing.T) {
	side := func(v string) ReleaseSide { return ReleaseSide{ServerVersion: v} }
	for _, c := range []struct {
		name       string
		base, head *ReleaseWindow
		verdict    string
		tool       string // the first tool's verdict
		codes      []string
	}{
		{"z just over 1.96 and 10 points up: worse",
			win(fig(100, 10, 0, nil), map[string]WindowFigures{"a": fig(100, 10, 0, nil)}),
			win(fig(100, 20, 0, nil), map[string]WindowFigures{"a": fig(100, 20, 0, nil)}),
			VerdictWorse, VerdictWorse, []string{ReasonErrorRateUp, ReasonErrorRateUp}},
		{"z 1.32: same",
			win(fig(200, 5, 0, nil), map[string]WindowFigures{"a": fig(200, 5, 0, nil)}),
			win(fig(200, 10, 0, nil), map[string]WindowFigures{"a": fig(200, 10, 0, nil)}),
			VerdictSame, VerdictSame, nil},
		{"significant but under half a point: same",
			// 0.10% vs 0.14% over a million calls each: z ≈ 8.17, delta .04 points.
			win(fig(1_000_000, 1000, 0, nil), nil), win(fig(1_000_000, 1400, 0, nil), nil),
			VerdictSame, "", nil},
		{"fewer errors: better",
			win(fig(100, 20, 0, nil), map[string]WindowFigures{"a": fig(100, 20, 0, nil)}),
			win(fig(100, 10, 0, nil), map[string]WindowFigures{"a": fig(100, 10, 0, nil)}),
			VerdictBetter, VerdictBetter, []string{ReasonErrorRateDown, ReasonErrorRateDown}},
		{"99 calls: insufficient",
			win(fig(500, 0, 0, nil), map[string]WindowFigures{"a": fig(500, 0, 0, nil)}),
			win(fig(99, 50, 0, nil), map[string]WindowFigures{"a": fig(99, 50, 0, nil)}),
			VerdictInsufficient, VerdictInsufficient, []string{ReasonInsufficientCalls}},
		{"p95 up 30% and 30 ms: worse; 20%: same",
			win(fig(300, 0, 100, nil), map[string]WindowFigures{"a": fig(150, 0, 100, nil), "b": fig(150, 0, 100, nil)}),
			win(fig(300, 0, 110, nil), map[string]WindowFigures{"a": fig(150, 0, 130, nil), "b": fig(150, 0, 120, nil)}),
			VerdictWorse, VerdictWorse, []string{ReasonP95Up}},
		{"p95 up 60% but 6 ms: same",
			win(fig(300, 0, 10, nil), nil), win(fig(300, 0, 16, nil), nil),
			VerdictSame, "", nil},
		{"p95 down from 100 to 60 ms: better",
			win(fig(300, 0, 100, nil), nil), win(fig(300, 0, 60, nil), nil),
			VerdictBetter, "", []string{ReasonP95Down}},
		{"a new error kind with 5 errors: worse",
			win(fig(1000, 10, 0, map[string]int64{"tool_error": 10}), map[string]WindowFigures{"a": fig(1000, 10, 0, map[string]int64{"tool_error": 10})}),
			win(fig(1000, 10, 0, map[string]int64{"tool_error": 5, "timeout": 5}), map[string]WindowFigures{"a": fig(1000, 10, 0, map[string]int64{"tool_error": 5, "timeout": 5})}),
			VerdictWorse, VerdictWorse, []string{ReasonNewErrorKind, ReasonNewErrorKind}},
		{"a tool disappeared: worse; a new one: same",
			win(fig(400, 0, 0, nil), map[string]WindowFigures{"old": fig(200, 0, 0, nil), "a": fig(200, 0, 0, nil)}),
			win(fig(400, 0, 0, nil), map[string]WindowFigures{"new": fig(200, 0, 0, nil), "a": fig(200, 0, 0, nil)}),
			VerdictWorse, VerdictWorse, []string{ReasonToolDisappeared}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CompareReleases("m", side("1"), side("2"), c.base, c.head)
			if got.Verdict != c.verdict {
				t.Errorf("verdict %s, want %s (%+v)", got.Verdict, c.verdict, got.Reasons)
			}
			if c.tool != "" && got.Tools[0].Verdict != c.tool {
				t.Errorf("first tool %+v, want %s", got.Tools[0], c.tool)
			}
			var codes []string
			for _, r := range got.Reasons {
				codes = append(codes, r.Code)
			}
			if len(codes) != len(c.codes) {
				t.Fatalf("reasons %+v, want codes %v", got.Reasons, c.codes)
			}
			for i := range codes {
				if codes[i] != c.codes[i] {
					t.Errorf("reasons %+v, want codes %v", got.Reasons, c.codes)
				}
			}
		})
	}
}

func TestMatchedWindowsAndVerdicts(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 5, 1, h, m, 0, 0, time.UTC) }
	// The base still serving after the head appeared: its window ends
	// after the head's first hour.
	bf, bt, hf, ht := MatchedWindows(ReleaseSpan{FirstSeen: at(1, 0), LastSeen: at(20, 0)}, ReleaseSpan{FirstSeen: at(9, 45), LastSeen: at(21, 0)})
	if !bt.Equal(at(10, 0)) || !bf.Equal(at(10, 0).Add(-24*time.Hour)) || !hf.Equal(at(9, 0)) || !ht.Equal(at(9, 0).Add(24*time.Hour)) {
		t.Errorf("overlapping: %v %v %v %v", bf, bt, hf, ht)
	}
	// The base gone an hour before: its window ends after its last hour.
	_, bt, _, _ = MatchedWindows(ReleaseSpan{LastSeen: at(7, 30)}, ReleaseSpan{FirstSeen: at(9, 45)})
	if !bt.Equal(at(8, 0)) {
		t.Errorf("gap: base window ends %v", bt)
	}
	spans := []ReleaseSpan{{ServerVersion: "3"}, {ServerVersion: "2"}, {ServerVersion: "1"}}
	if p, ok := PreviousRelease(spans, "2"); !ok || p.ServerVersion != "1" {
		t.Errorf("previous of 2: %v %v", p, ok)
	}
	if _, ok := PreviousRelease(spans, "1"); ok {
		t.Error("1 has no previous release")
	}
	for verdict, want := range map[string]string{VerdictWorse: VerdictFail, VerdictInsufficient: VerdictPending, VerdictSame: VerdictPass, VerdictBetter: VerdictPass} {
		if v := VerdictOf("2", &ReleaseComparison{Verdict: verdict, Base: ReleaseSide{ServerVersion: "1"}}); v.Verdict != want || *v.ComparedWith != "1" {
			t.Errorf("%s: %+v", verdict, v)
		}
	}
	if v := FirstReleaseVerdict("1", win(fig(99, 0, 0, nil), nil)); v.Verdict != VerdictPending {
		t.Errorf("first release with 99 calls: %+v", v)
	}
	if v := FirstReleaseVerdict("1", win(fig(100, 0, 0, nil), nil)); v.Verdict != VerdictPass {
		t.Errorf("first release with 100 calls: %+v", v)
	}
}
