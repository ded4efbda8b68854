package analytics

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// The release comparison's statistics (docs/releases.md states them for a
// reviewer; the constants are the documented values).
const (
	// ReleaseWindowHours is the length of the matched windows.
	ReleaseWindowHours = 24
	// ReleaseMinCalls is the minimum number of calls on each side (a
	// release's window, or one tool's) before its error rate is judged.
	ReleaseMinCalls = 100
	// ReleaseZCritical is the two-sided critical value of the
	// two-proportion z-test at 95% confidence.
	ReleaseZCritical = 1.959964
	// ReleaseMinRateDelta is the smallest change of error rate (absolute,
	// half a percentage point) that a significant test reports: at high
	// volume a negligible change is significant, and not a regression.
	ReleaseMinRateDelta = 0.005
	// ReleaseMinDurations is the minimum number of calls with a duration
	// on each side before p95 is judged.
	ReleaseMinDurations = 100
	// ReleaseP95Tolerance is the relative change of p95 tolerated (25%),
	// ReleaseP95MinDeltaMs the absolute one (25 ms): p95 is worse when it
	// exceeds both. The p95 of a hundred calls is their fifth largest, and
	// moves by several milliseconds with the host's scheduling alone.
	ReleaseP95Tolerance  = 0.25
	ReleaseP95MinDeltaMs = 25.0
	// ReleaseMinNewKindErrors is how many errors of a kind the base window
	// never had make that kind a new failure mode of the head.
	ReleaseMinNewKindErrors = 5
)

// Release verdicts of a comparison.
const (
	VerdictBetter       = "better"
	VerdictWorse        = "worse"
	VerdictSame         = "same"
	VerdictInsufficient = "insufficient"
)

// CI verdicts of a release (GET .../releases/{v}/verdict).
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictPending = "pending"
)

// Reason codes of a comparison.
const (
	ReasonInsufficientCalls = "insufficient_calls"
	ReasonErrorRateUp       = "error_rate_up"
	ReasonErrorRateDown     = "error_rate_down"
	ReasonP95Up             = "p95_up"
	ReasonP95Down           = "p95_down"
	ReasonNewErrorKind      = "new_error_kind"
	ReasonToolDisappeared   = "tool_disappeared"
	ReasonNewTool           = "new_tool"
	ReasonFirstRelease      = "first_release"
)

// Reason explains a verdict: a short code, the tool it is about ("" for
// the release as a whole) and a sentence.
type Reason struct {
	Code    string `json:"code"`
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

// SideFigures are one side's figures in a comparison.
type SideFigures struct {
	Calls     int64    `json:"calls"`
	Errors    int64    `json:"errors"`
	ErrorRate float64  `json:"error_rate"`
	P95Ms     *float64 `json:"p95_ms"`
}

// ReleaseSide is one release of a comparison and its matched window.
type ReleaseSide struct {
	ServerVersion string    `json:"server_version"`
	FirstSeenAt   time.Time `json:"first_seen_at"`
	LastSeenAt    time.Time `json:"last_seen_at"`
	WindowFrom    time.Time `json:"window_from"`
	WindowTo      time.Time `json:"window_to"`
	SideFigures
}

// ToolComparison is one tool in both windows.
type ToolComparison struct {
	Name    string      `json:"name"`
	Base    SideFigures `json:"base"`
	Head    SideFigures `json:"head"`
	Verdict string      `json:"verdict"`
	Reasons []Reason    `json:"reasons"`
}

// ReleaseComparison is GET /v1/mcps/{id}/releases/compare.
type ReleaseComparison struct {
	MCPID   string      `json:"mcp_id"`
	Base    ReleaseSide `json:"base"`
	Head    ReleaseSide `json:"head"`
	Verdict string      `json:"verdict"`
	// Reasons are the release's own (over all its items) followed by every
	// tool's, worse first.
	Reasons []Reason         `json:"reasons"`
	Tools   []ToolComparison `json:"tools"`
}

// ReleaseVerdict is GET /v1/mcps/{id}/releases/{server_version}/verdict.
type ReleaseVerdict struct {
	ServerVersion string   `json:"server_version"`
	Verdict       string   `json:"verdict"`
	Reasons       []Reason `json:"reasons"`
	// ComparedWith is the previous release, null for the first one.
	ComparedWith *string `json:"compared_with"`
	// Comparison is the comparison behind the verdict (null for the first
	// release).
	Comparison *ReleaseComparison `json:"comparison"`
}

// TwoProportionZ is the pooled two-proportion z statistic of x2/n2
// against x1/n1: positive when the second rate is higher. 0 when either
// side is empty or the pooled rate is 0 or 1 (no variance: the rates are
// equal).
func TwoProportionZ(x1, n1, x2, n2 int64) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 0
	}
	p1, p2 := float64(x1)/float64(n1), float64(x2)/float64(n2)
	p := float64(x1+x2) / float64(n1+n2)
	v := p * (1 - p) * (1/float64(n1) + 1/float64(n2))
	if v <= 0 {
		return 0
	}
	return (p2 - p1) / math.Sqrt(v)
}

func sideOf(f WindowFigures) SideFigures {
	return SideFigures{Calls: f.Calls, Errors: f.Errors, ErrorRate: ErrorRate(f.Errors, f.Calls), P95Ms: f.P95Ms}
}

// judge compares one pair of windows (a tool's or the whole release's)
// that both have enough calls, and returns its reasons, tool naming them.
func judge(tool string, base, head WindowFigures) []Reason {
	var out []Reason
	br, hr := ErrorRate(base.Errors, base.Calls), ErrorRate(head.Errors, head.Calls)
	z := TwoProportionZ(base.Errors, base.Calls, head.Errors, head.Calls)
	switch {
	case z >= ReleaseZCritical && hr-br >= ReleaseMinRateDelta:
		out = append(out, Reason{ReasonErrorRateUp, tool, fmt.Sprintf("error rate rose from %.2f%% to %.2f%% (z = %.2f, 95%% confidence)", 100*br, 100*hr, z)})
	case z <= -ReleaseZCritical && br-hr >= ReleaseMinRateDelta:
		out = append(out, Reason{ReasonErrorRateDown, tool, fmt.Sprintf("error rate fell from %.2f%% to %.2f%% (z = %.2f, 95%% confidence)", 100*br, 100*hr, z)})
	}
	if base.P95Ms != nil && head.P95Ms != nil && base.Durations >= ReleaseMinDurations && head.Durations >= ReleaseMinDurations {
		b, h := *base.P95Ms, *head.P95Ms
		switch {
		case h > b*(1+ReleaseP95Tolerance) && h-b >= ReleaseP95MinDeltaMs:
			out = append(out, Reason{ReasonP95Up, tool, fmt.Sprintf("p95 rose from %.1f ms to %.1f ms (more than 25%% and 25 ms)", b, h)})
		case b > h*(1+ReleaseP95Tolerance) && b-h >= ReleaseP95MinDeltaMs:
			out = append(out, Reason{ReasonP95Down, tool, fmt.Sprintf("p95 fell from %.1f ms to %.1f ms", b, h)})
		}
	}
	kinds := make([]string, 0, len(head.ErrorKinds))
	for k, n := range head.ErrorKinds {
		if n >= ReleaseMinNewKindErrors && base.ErrorKinds[k] == 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		out = append(out, Reason{ReasonNewErrorKind, tool, fmt.Sprintf("%d errors of kind %s, which the base window never had", head.ErrorKinds[k], k)})
	}
	return out
}

// verdictOf is the verdict of a set of reasons over windows with enough
// calls: worse when one reason is, better when one is and none is worse.
func verdictOf(reasons []Reason) string {
	v := VerdictSame
	for _, r := range reasons {
		switch r.Code {
		case ReasonErrorRateUp, ReasonP95Up, ReasonNewErrorKind, ReasonToolDisappeared:
			return VerdictWorse
		case ReasonErrorRateDown, ReasonP95Down:
			v = VerdictBetter
		}
	}
	return v
}

func enough(base, head WindowFigures) bool {
	return base.Calls >= ReleaseMinCalls && head.Calls >= ReleaseMinCalls
}

func insufficient(tool string, base, head WindowFigures) Reason {
	return Reason{ReasonInsufficientCalls, tool, fmt.Sprintf("%d calls in the base window and %d in the head's; %d are needed on each side",
		base.Calls, head.Calls, ReleaseMinCalls)}
}

// compareTool compares one tool's windows; headTotal is the head's whole
// window (a tool missing from a head with enough traffic disappeared).
func compareTool(name string, base, head WindowFigures, headTotal int64) ToolComparison {
	t := ToolComparison{Name: name, Base: sideOf(base), Head: sideOf(head), Reasons: []Reason{}}
	switch {
	case base.Calls >= ReleaseMinCalls && head.Calls == 0 && headTotal >= ReleaseMinCalls:
		t.Reasons = append(t.Reasons, Reason{ReasonToolDisappeared, name, fmt.Sprintf("%d calls in the base window, none in the head's", base.Calls)})
	case base.Calls == 0 && head.Calls > 0:
		t.Verdict = VerdictSame
		t.Reasons = append(t.Reasons, Reason{ReasonNewTool, name, "called in the head's window only: nothing to compare with"})
		return t
	case !enough(base, head):
		t.Verdict = VerdictInsufficient
		t.Reasons = append(t.Reasons, insufficient(name, base, head))
		return t
	default:
		t.Reasons = judge(name, base, head)
	}
	t.Verdict = verdictOf(t.Reasons)
	return t
}

// CompareReleases compares the head's window with the base's (the sides
// carry the releases and their windows; their figures are filled here):
//
//   - each tool called in either window is judged (compareTool): the error
//     rates by the two-proportion z-test, p95 against the tolerance, new
//     error kinds, a tool that disappeared; insufficient below the
//     minimum calls on either side;
//   - the release is worse when its whole window is, or any tool is;
//     insufficient when either whole window has fewer than ReleaseMinCalls
//     calls; better when the whole window or a tool is better; same
//     otherwise.
func CompareReleases(mcpID string, base, head ReleaseSide, bw, hw *ReleaseWindow) *ReleaseComparison {
	base.SideFigures, head.SideFigures = sideOf(bw.Total), sideOf(hw.Total)
	c := &ReleaseComparison{MCPID: mcpID, Base: base, Head: head, Reasons: []Reason{}, Tools: []ToolComparison{}}
	names := map[string]bool{}
	for n := range bw.Tools {
		names[n] = true
	}
	for n := range hw.Tools {
		names[n] = true
	}
	for n := range names {
		c.Tools = append(c.Tools, compareTool(n, bw.Tools[n], hw.Tools[n], hw.Total.Calls))
	}
	sort.Slice(c.Tools, func(i, j int) bool {
		a, b := c.Tools[i], c.Tools[j]
		if ra, rb := verdictRank(a.Verdict), verdictRank(b.Verdict); ra != rb {
			return ra < rb
		}
		if a.Base.Calls+a.Head.Calls != b.Base.Calls+b.Head.Calls {
			return a.Base.Calls+a.Head.Calls > b.Base.Calls+b.Head.Calls
		}
		return a.Name < b.Name
	})
	if !enough(bw.Total, hw.Total) {
		c.Verdict = VerdictInsufficient
		c.Reasons = append(c.Reasons, insufficient("", bw.Total, hw.Total))
		return c
	}
	c.Reasons = judge("", bw.Total, hw.Total)
	c.Verdict = verdictOf(c.Reasons)
	for _, t := range c.Tools {
		if t.Verdict == VerdictWorse || t.Verdict == VerdictBetter {
			c.Reasons = append(c.Reasons, t.Reasons...)
		}
		if t.Verdict == VerdictWorse || (t.Verdict == VerdictBetter && c.Verdict == VerdictSame) {
			c.Verdict = t.Verdict
		}
	}
	sort.SliceStable(c.Reasons, func(i, j int) bool {
		return verdictRank(verdictOf(c.Reasons[i:i+1])) < verdictRank(verdictOf(c.Reasons[j:j+1]))
	})
	return c
}

func verdictRank(v string) int {
	switch v {
	case VerdictWorse:
		return 0
	case VerdictBetter:
		return 1
	case VerdictSame:
		return 2
	}
	return 3
}

// VerdictOf maps a comparison to a CI verdict: worse fails, insufficient
// is pending, better and same pass. The reasons are the comparison's
// (for a pass, those that made it better, if any).
func VerdictOf(version string, c *ReleaseComparison) *ReleaseVerdict {
	v := &ReleaseVerdict{ServerVersion: version, Reasons: c.Reasons, Comparison: c}
	base := c.Base.ServerVersion
	v.ComparedWith = &base
	switch c.Verdict {
	case VerdictWorse:
		v.Verdict = VerdictFail
	case VerdictInsufficient:
		v.Verdict = VerdictPending
	default:
		v.Verdict = VerdictPass
	}
	return v
}

// FirstReleaseVerdict is the verdict of a release without a previous one:
// pending until its first ReleaseWindowHours hours hold ReleaseMinCalls
// calls, then pass (there is nothing it could be worse than).
func FirstReleaseVerdict(version string, w *ReleaseWindow) *ReleaseVerdict {
	v := &ReleaseVerdict{ServerVersion: version, Verdict: VerdictPass}
	if w.Total.Calls < ReleaseMinCalls {
		v.Verdict = VerdictPending
		v.Reasons = []Reason{{ReasonInsufficientCalls, "", fmt.Sprintf("%d calls in its first %d hours; %d are needed", w.Total.Calls, ReleaseWindowHours, ReleaseMinCalls)}}
		return v
	}
	v.Reasons = []Reason{{ReasonFirstRelease, "", "the MCP's first release: nothing to compare with"}}
	return v
}
