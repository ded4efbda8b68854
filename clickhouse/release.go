package clickhouse

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpscope/telemetry/analytics"
)

// The release reads (docs/releases.md) from release_hourly (migration
// 011): per release, hour, tool and error kind.

var _ analytics.ReleaseReader = (*Reads)(nil)

// maxCompareTools bounds the tools a release window lists (most calls
// first); the totals still cover every item.
const maxCompareTools = 500

// releaseFigures is what one release_hourly group merges to.
type releaseFigures struct {
	key    string
	calls  uint64
	errors uint64
	durN   uint64
	q      []float32
}

func (f *releaseFigures) ptrs() []any { return []any{&f.key, &f.calls, &f.errors, &f.durN, &f.q} }

func (f releaseFigures) p95() *float64 {
	if f.durN == 0 || len(f.q) == 0 {
		return nil
	}
	v := quantile(f.q[0])
	return &v
}

func (f releaseFigures) window() analytics.WindowFigures {
	return analytics.WindowFigures{Calls: int64(f.calls), Errors: int64(f.errors), Durations: int64(f.durN), P95Ms: f.p95()}
}

const releaseCols = "countMerge(calls), sumMerge(errors), sumMerge(dur_n), quantilesTDigestIfMerge(0.95)(dur_q)"

// hoursFilter selects the rows of the hours [from, to).
func hoursFilter(from, to time.Time) string {
	return fmt.Sprintf("hour >= %s AND hour < %s", timeLit(from), timeLit(to))
}

// ReleaseSpans implements analytics.ReleaseReader.
func (db *Reads) ReleaseSpans(ctx context.Context, mcpID string) ([]analytics.ReleaseSpan, error) {
	type row struct {
		v           string
		first, last uint64
	}
	var rows []row
	q := fmt.Sprintf(`SELECT server_version, minMerge(first_seen) AS f, maxMerge(last_seen) FROM %s.release_hourly
		WHERE mcp_id = ? GROUP BY server_version ORDER BY f DESC, server_version LIMIT %d`, db.db, analytics.MaxReleases)
	if err := db.query(ctx, "release spans", q, []any{mcpID}, func() []any {
		x := appendRow(&rows)
		return []any{&x.v, &x.first, &x.last}
	}); err != nil {
		return nil, err
	}
	out := make([]analytics.ReleaseSpan, len(rows))
	for i, x := range rows {
		out[i] = analytics.ReleaseSpan{ServerVersion: x.v, FirstSeen: msTime(x.first), LastSeen: msTime(x.last)}
	}
	return out, nil
}

// Releases implements analytics.ReleaseReader: the spans, and the
// figures and error kinds of the range's hours, in three queries at once.
func (db *Reads) Releases(ctx context.Context, mcpID string, r analytics.Range) ([]analytics.Release, error) {
	var (
		spans []analytics.ReleaseSpan
		figs  []releaseFigures
		kinds []struct {
			v string
			k analytics.ErrorKindCount
		}
	)
	in := hoursFilter(r.Lower(), r.End())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { spans, err = db.ReleaseSpans(gctx, mcpID); return err })
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT server_version, %s FROM %s.release_hourly
			WHERE mcp_id = ? AND %s GROUP BY server_version`, releaseCols, db.db, in)
		return db.query(gctx, "releases", q, []any{mcpID}, func() []any { return appendRow(&figs).ptrs() })
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT server_version, error_kind, toInt64(countMerge(calls)) AS n FROM %s.release_hourly
			WHERE mcp_id = ? AND error_kind != '' AND %s GROUP BY server_version, error_kind ORDER BY n DESC, error_kind`, db.db, in)
		return db.query(gctx, "release error kinds", q, []any{mcpID}, func() []any {
			x := appendRow(&kinds)
			return []any{&x.v, &x.k.ErrorKind, &x.k.Count}
		})
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	byVersion := make(map[string]releaseFigures, len(figs))
	for _, f := range figs {
		byVersion[f.key] = f
	}
	kindsOf := map[string][]analytics.ErrorKindCount{}
	for _, x := range kinds {
		kindsOf[x.v] = append(kindsOf[x.v], x.k)
	}
	out := []analytics.Release{}
	for _, s := range spans {
		f, ok := byVersion[s.ServerVersion]
		if !ok || f.calls == 0 {
			continue
		}
		k := kindsOf[s.ServerVersion]
		if k == nil {
			k = []analytics.ErrorKindCount{}
		}
		out = append(out, analytics.Release{ServerVersion: s.ServerVersion, FirstSeenAt: s.FirstSeen, LastSeenAt: s.LastSeen,
			CallCounts: analytics.Counts(int64(f.calls), int64(f.errors)), P95Ms: f.p95(), ErrorKinds: k})
	}
	return out, nil
}

// ReleaseWindow implements analytics.ReleaseReader: the tools' figures
// with their totals (every item) in one query, the error kinds in another.
func (db *Reads) ReleaseWindow(ctx context.Context, mcpID, version string, from, to time.Time) (*analytics.ReleaseWindow, error) {
	var (
		tools []releaseFigures
		total releaseFigures
		kinds []struct {
			tool, kind string
			n          int64
		}
	)
	in := hoursFilter(from, to)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT tool, %s FROM %s.release_hourly
			WHERE mcp_id = ? AND server_version = ? AND %s
			GROUP BY tool WITH TOTALS ORDER BY countMerge(calls) DESC, tool LIMIT %d`, releaseCols, db.db, in, maxCompareTools+1)
		return db.query(gctx, "release window", q, []any{mcpID, version}, func() []any { return appendRow(&tools).ptrs() }, total.ptrs()...)
	})
	g.Go(func() error {
		q := fmt.Sprintf(`SELECT tool, error_kind, toInt64(countMerge(calls)) FROM %s.release_hourly
			WHERE mcp_id = ? AND server_version = ? AND error_kind != '' AND %s
			GROUP BY tool, error_kind`, db.db, in)
		return db.query(gctx, "release window kinds", q, []any{mcpID, version}, func() []any {
			x := appendRow(&kinds)
			return []any{&x.tool, &x.kind, &x.n}
		})
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	w := &analytics.ReleaseWindow{Total: total.window(), Tools: map[string]analytics.WindowFigures{}}
	for _, t := range tools {
		if t.key != "" && len(w.Tools) < maxCompareTools {
			w.Tools[t.key] = t.window()
		}
	}
	for _, k := range kinds {
		addKind(&w.Total, k.kind, k.n)
		if t, ok := w.Tools[k.tool]; ok && k.tool != "" {
			addKind(&t, k.kind, k.n)
			w.Tools[k.tool] = t
		}
	}
	return w, nil
}

func addKind(f *analytics.WindowFigures, kind string, n int64) {
	if f.ErrorKinds == nil {
		f.ErrorKinds = map[string]int64{}
	}
	f.ErrorKinds[kind] += n
}
