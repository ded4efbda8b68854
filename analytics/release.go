package analytics

import (
	"context"
	"time"
)

// Releases (docs/releases.md): a release is a server_version an MCP's
// items carried. The releases read lists them with their figures; a
// comparison sets two of them side by side over matched windows and gives
// a verdict (CompareReleases); the verdict read answers a CI.

// MaxReleases bounds the releases a read lists (the newest first): a
// tenant sets server_version freely, so their number is the tenant's.
const MaxReleases = 200

// Release is one server_version of an MCP: when it was first and last seen
// (over everything stored, not only the range) and its figures over the
// range.
type Release struct {
	ServerVersion string    `json:"server_version"`
	FirstSeenAt   time.Time `json:"first_seen_at"`
	LastSeenAt    time.Time `json:"last_seen_at"`
	CallCounts
	// P95Ms is the 95th percentile of duration_ms over the range's items
	// that carry one, null when none does.
	P95Ms *float64 `json:"p95_ms"`
	// ErrorKinds counts the range's errors by kind, most frequent first.
	ErrorKinds []ErrorKindCount `json:"error_kinds"`
}

// ReleaseList is GET /v1/mcps/{id}/releases: the releases with an item in
// the range, newest (latest first seen) first.
type ReleaseList struct {
	MCPID string    `json:"mcp_id"`
	From  string    `json:"from"`
	To    string    `json:"to"`
	Items []Release `json:"items"`
}

// ReleaseMarker marks a release on a chart: the overview and the tool
// detail list those first seen within their range, oldest first.
type ReleaseMarker struct {
	ServerVersion string    `json:"server_version"`
	FirstSeenAt   time.Time `json:"first_seen_at"`
}

// ReleaseSpan is when a release was first and last seen.
type ReleaseSpan struct {
	ServerVersion string
	FirstSeen     time.Time
	LastSeen      time.Time
}

// WindowFigures are one release's figures over a window, for all its
// items or for one tool.
type WindowFigures struct {
	Calls  int64
	Errors int64
	// Durations counts the items that carry duration_ms; P95Ms is their
	// 95th percentile (nil without any).
	Durations int64
	P95Ms     *float64
	// ErrorKinds counts the errors by kind (errors without a kind are only
	// in Errors).
	ErrorKinds map[string]int64
}

// ReleaseWindow is a release's figures over a window: Total over every
// item (any method), Tools per tool (tools/call items).
type ReleaseWindow struct {
	Total WindowFigures
	Tools map[string]WindowFigures
}

// ReleaseReader serves the release reads from the release rollup.
type ReleaseReader interface {
	// Releases lists the releases with an item in r (at most MaxReleases,
	// newest first), first and last seen over everything stored, figures
	// over r.
	Releases(ctx context.Context, mcpID string, r Range) ([]Release, error)
	// ReleaseSpans lists the MCP's releases (at most MaxReleases, newest
	// first seen first).
	ReleaseSpans(ctx context.Context, mcpID string) ([]ReleaseSpan, error)
	// ReleaseWindow reads one release's figures over the hours [from, to).
	ReleaseWindow(ctx context.Context, mcpID, version string, from, to time.Time) (*ReleaseWindow, error)
}

// Markers returns the releases of spans first seen in r, oldest first.
func Markers(spans []ReleaseSpan, r Range) []ReleaseMarker {
	out := []ReleaseMarker{}
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		if !s.FirstSeen.Before(r.Lower()) && s.FirstSeen.Before(r.End()) {
			out = append(out, ReleaseMarker{ServerVersion: s.ServerVersion, FirstSeenAt: s.FirstSeen})
		}
	}
	return out
}

// PreviousRelease returns the release first seen just before the one named
// version in spans (newest first), and false when it is the first.
func PreviousRelease(spans []ReleaseSpan, version string) (ReleaseSpan, bool) {
	for i, s := range spans {
		if s.ServerVersion == version {
			if i+1 < len(spans) {
				return spans[i+1], true
			}
			return ReleaseSpan{}, false
		}
	}
	return ReleaseSpan{}, false
}

// FindRelease returns the span of version.
func FindRelease(spans []ReleaseSpan, version string) (ReleaseSpan, bool) {
	for _, s := range spans {
		if s.ServerVersion == version {
			return s, true
		}
	}
	return ReleaseSpan{}, false
}

// MatchedWindows returns the windows a comparison reads: the head's first
// ReleaseWindowHours hours of traffic, from the hour of its first item,
// and the base's last ReleaseWindowHours hours of traffic up to the hour
// the head appeared: ending after the hour of the base's last item, or
// after the hour of the head's first item when the base kept serving
// later (a rollout). Each window counts its own release's items only, so
// the hour both served is in both, each side with its own traffic.
func MatchedWindows(base, head ReleaseSpan) (baseFrom, baseTo, headFrom, headTo time.Time) {
	w := ReleaseWindowHours * time.Hour
	headFrom = head.FirstSeen.UTC().Truncate(time.Hour)
	headTo = headFrom.Add(w)
	baseTo = base.LastSeen.UTC().Truncate(time.Hour).Add(time.Hour)
	if baseTo.After(headFrom.Add(time.Hour)) {
		baseTo = headFrom.Add(time.Hour)
	}
	return baseTo.Add(-w), baseTo, headFrom, headTo
}
