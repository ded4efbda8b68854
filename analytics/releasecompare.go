package analytics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpscope/telemetry"
)

// ReleaseComparer answers the comparison and verdict reads from a
// ReleaseReader.
type ReleaseComparer struct{ Reader ReleaseReader }

// Compare compares head with base (docs/releases.md). An empty head is
// the latest release, an empty base the release first seen just before
// head. Errors: ENOTFOUND for a version the MCP never had (among its
// MaxReleases newest) or an MCP with no release before head; EINVALID when
// base was first seen after head, or is head.
func (c ReleaseComparer) Compare(ctx context.Context, mcpID, base, head string) (*ReleaseComparison, error) {
	spans, err := c.Reader.ReleaseSpans(ctx, mcpID)
	if err != nil {
		return nil, err
	}
	h, err := headSpan(spans, head)
	if err != nil {
		return nil, err
	}
	var b ReleaseSpan
	if base == "" {
		var ok bool
		if b, ok = PreviousRelease(spans, h.ServerVersion); !ok {
			return nil, telemetry.Errorf(telemetry.ENOTFOUND, "release %q is the MCP's first: there is no release before it to compare with", h.ServerVersion)
		}
	} else {
		var ok bool
		if b, ok = FindRelease(spans, base); !ok {
			return nil, telemetry.FieldError(telemetry.ENOTFOUND, "query.base", "the MCP has no release %q", base)
		}
		if b.ServerVersion == h.ServerVersion || !b.FirstSeen.Before(h.FirstSeen) {
			return nil, telemetry.FieldError(telemetry.EINVALID, "query.base", "base %q must have been first seen before head %q", b.ServerVersion, h.ServerVersion)
		}
	}
	return c.compareSpans(ctx, mcpID, b, h)
}

func headSpan(spans []ReleaseSpan, head string) (ReleaseSpan, error) {
	if head == "" {
		if len(spans) == 0 {
			return ReleaseSpan{}, telemetry.Errorf(telemetry.ENOTFOUND, "the MCP has no release yet (no item carried server_version)")
		}
		return spans[0], nil
	}
	h, ok := FindRelease(spans, head)
	if !ok {
		return ReleaseSpan{}, telemetry.FieldError(telemetry.ENOTFOUND, "query.head", "the MCP has no release %q", head)
	}
	return h, nil
}

func (c ReleaseComparer) compareSpans(ctx context.Context, mcpID string, b, h ReleaseSpan) (*ReleaseComparison, error) {
	bf, bt, hf, ht := MatchedWindows(b, h)
	var (
		bw, hw     *ReleaseWindow
		berr, herr error
		wg         sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		bw, berr = c.Reader.ReleaseWindow(ctx, mcpID, b.ServerVersion, bf, bt)
	}()
	hw, herr = c.Reader.ReleaseWindow(ctx, mcpID, h.ServerVersion, hf, ht)
	wg.Wait()
	if err := errors.Join(berr, herr); err != nil {
		return nil, err
	}
	return CompareReleases(mcpID,
		ReleaseSide{ServerVersion: b.ServerVersion, FirstSeenAt: b.FirstSeen, LastSeenAt: b.LastSeen, WindowFrom: bf, WindowTo: bt},
		ReleaseSide{ServerVersion: h.ServerVersion, FirstSeenAt: h.FirstSeen, LastSeenAt: h.LastSeen, WindowFrom: hf, WindowTo: ht},
		bw, hw), nil
}

// Verdict is the CI verdict of version against the release before it
// (VerdictOf); the first release passes once it has the minimum traffic
// (FirstReleaseVerdict). ENOTFOUND for a version the MCP never had.
func (c ReleaseComparer) Verdict(ctx context.Context, mcpID, version string) (*ReleaseVerdict, error) {
	spans, err := c.Reader.ReleaseSpans(ctx, mcpID)
	if err != nil {
		return nil, err
	}
	h, ok := FindRelease(spans, version)
	if !ok {
		return nil, telemetry.FieldError(telemetry.ENOTFOUND, "path.server_version", "the MCP has no release %q", version)
	}
	b, ok := PreviousRelease(spans, version)
	if !ok {
		from := h.FirstSeen.UTC().Truncate(time.Hour)
		w, err := c.Reader.ReleaseWindow(ctx, mcpID, version, from, from.Add(ReleaseWindowHours*time.Hour))
		if err != nil {
			return nil, err
		}
		return FirstReleaseVerdict(version, w), nil
	}
	cmp, err := c.compareSpans(ctx, mcpID, b, h)
	if err != nil {
		return nil, err
	}
	return VerdictOf(version, cmp), nil
}

// PreviousReleaseStats returns the figures a rule with baseline
// previous_release compares with: the release before the latest one, over
// its last ReleaseWindowHours hours of traffic before the latest appeared
// (the comparison's base window), as window stats keyed by tool ("": every
// item). nil when the MCP has fewer than two releases.
func (c ReleaseComparer) PreviousReleaseStats(ctx context.Context, mcpID string) (map[string]WindowStat, error) {
	spans, err := c.Reader.ReleaseSpans(ctx, mcpID)
	if err != nil || len(spans) < 2 {
		return nil, err
	}
	bf, bt, _, _ := MatchedWindows(spans[1], spans[0])
	w, err := c.Reader.ReleaseWindow(ctx, mcpID, spans[1].ServerVersion, bf, bt)
	if err != nil {
		return nil, err
	}
	out := map[string]WindowStat{"": w.Total.stat()}
	for name, f := range w.Tools {
		out[name] = f.stat()
	}
	return out, nil
}

func (f WindowFigures) stat() WindowStat {
	return WindowStat{Calls: f.Calls, Errors: f.Errors, P95Ms: f.P95Ms, ErrorKinds: f.ErrorKinds}
}
