package analytics

import (
	"context"
	"sync"
)

// MetricQuery is one metric read of an MCP: the range (ParseRange, with
// the caller's KeptFrom), the series granularity ("", day or hour;
// CheckGranularity) and the comparison ("" or ComparePrevious). Whether
// the MCP is the caller's is checked before.
type MetricQuery struct {
	MCPID       string
	Range       Range
	Granularity string
	Compare     string
}

// MetricReads answers metric reads from a Reader: the figures of the
// range, the hourly series and the previous period are independent reads,
// run together; a failure of one cancels the others and is the answer.
type MetricReads struct {
	Reader Reader
	// Failures, when set, adds the overview's unknown_tool_calls
	// (UnknownToolReport, with Inventory when set).
	Failures  FailureReader
	Inventory InventoryService
	// Releases, when set, adds the overview's and the tool detail's
	// release markers (Markers).
	Releases ReleaseReader
}

// markers returns the release markers of q's range ([] without a
// ReleaseReader).
func (m MetricReads) markers(ctx context.Context, q MetricQuery) ([]ReleaseMarker, error) {
	if m.Releases == nil {
		return []ReleaseMarker{}, nil
	}
	spans, err := m.Releases.ReleaseSpans(ctx, q.MCPID)
	if err != nil {
		return nil, err
	}
	return Markers(spans, q.Range), nil
}

// Overview returns the overview of q.MCPID, with the hourly series and
// the previous period when q asks for them. Errors: CheckGranularity's,
// the Reader's.
func (m MetricReads) Overview(ctx context.Context, q MetricQuery) (*Overview, error) {
	o, err := fanOutRead(ctx, q,
		func(ctx context.Context, r Range) (*Overview, error) {
			o, err := m.Reader.Overview(ctx, q.MCPID, r)
			if err != nil || m.Failures == nil {
				return o, err
			}
			var n int64
			u, err := UnknownToolReport(ctx, m.Failures, m.Inventory, q.MCPID, r)
			if err == nil {
				n = u.UnknownToolCalls()
			}
			o.UnknownToolCalls, err = nullIfTooMany(n, err)
			return o, err
		},
		func(ctx context.Context, r Range) ([]OverviewDay, error) {
			return m.Reader.OverviewHourly(ctx, q.MCPID, r)
		},
		func(o *Overview, hours []OverviewDay, hourly bool, prev *Overview) {
			if hourly {
				o.Series = hours
			}
			if prev != nil {
				o.Previous = OverviewPreviousOf(prev)
			}
		})
	if err != nil {
		return nil, err
	}
	if o.Releases, err = m.markers(ctx, q); err != nil {
		return nil, err
	}
	return o, nil
}

// Tools returns the tools of q.MCPID, each with its figures in the
// previous period when q asks for them (the list has no series).
func (m MetricReads) Tools(ctx context.Context, q MetricQuery) (*ToolList, error) {
	return fanOutRead(ctx, q,
		func(ctx context.Context, r Range) (*ToolList, error) { return m.Reader.Tools(ctx, q.MCPID, r) },
		nil,
		func(o *ToolList, _ struct{}, _ bool, prev *ToolList) {
			if prev != nil {
				SetPreviousTools(q.Range, o, prev)
			}
		})
}

// Tool returns one tool of q.MCPID, with the hourly series and the
// previous period when q asks for them. Errors: CheckGranularity's, the
// Reader's.
func (m MetricReads) Tool(ctx context.Context, q MetricQuery, name string) (*ToolDetail, error) {
	o, err := fanOutRead(ctx, q,
		func(ctx context.Context, r Range) (*ToolDetail, error) { return m.Reader.Tool(ctx, q.MCPID, name, r) },
		func(ctx context.Context, r Range) ([]ToolDay, error) {
			return m.Reader.ToolHourly(ctx, q.MCPID, name, r)
		},
		func(o *ToolDetail, hours []ToolDay, hourly bool, prev *ToolDetail) {
			if hourly {
				o.Series = hours
			}
			if prev != nil {
				o.Previous = ToolPreviousOf(prev)
			}
		})
	if err != nil {
		return nil, err
	}
	if o.Releases, err = m.markers(ctx, q); err != nil {
		return nil, err
	}
	return o, nil
}

// fanOutRead reads the figures of q.Range, the hourly series (when q asks
// for it; a read without one passes nil) and the figures of the previous
// period (when q asks for them) together, then hands them to join.
func fanOutRead[T, S any](ctx context.Context, q MetricQuery,
	figures func(context.Context, Range) (*T, error),
	series func(context.Context, Range) (S, error),
	join func(o *T, hours S, hourly bool, prev *T)) (*T, error) {
	hourly := false
	if series != nil {
		var err error
		if hourly, err = CheckGranularity(q.Granularity, q.Range); err != nil {
			return nil, err
		}
	}
	var (
		o, prev *T
		hours   S
	)
	err := fanOut(ctx,
		func(ctx context.Context) (err error) { o, err = figures(ctx, q.Range); return err },
		when(hourly, func(ctx context.Context) (err error) { hours, err = series(ctx, q.Range); return err }),
		when(q.Compare == ComparePrevious, func(ctx context.Context) (err error) { prev, err = figures(ctx, q.Range.Previous()); return err }))
	if err != nil {
		return nil, err
	}
	join(o, hours, hourly, prev)
	return o, nil
}

// Breakdown returns q.MCPID split by b (ParseBreakdownQuery), with each
// value's figures in the previous period when q asks for them: that read
// follows the first, since it asks only for the values listed
// (AddPreviousBreakdown). A breakdown has no series.
func (m MetricReads) Breakdown(ctx context.Context, q MetricQuery, b BreakdownQuery) (*Breakdown, error) {
	out, err := m.Reader.Breakdown(ctx, q.MCPID, q.Range, b)
	if err == nil && q.Compare == ComparePrevious {
		err = AddPreviousBreakdown(ctx, m.Reader, q.MCPID, q.Range, b, out)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// when is read unless ask is false (then nil, which fanOut skips).
func when(ask bool, read func(context.Context) error) func(context.Context) error {
	if !ask {
		return nil
	}
	return read
}

// fanOut runs the reads together and returns the first error; it cancels
// the others' context at the first failure. nil reads are skipped.
func fanOut(ctx context.Context, reads ...func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, read := range reads {
		if read == nil {
			continue
		}
		wg.Go(func() {
			if err := read(ctx); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	return first
}
