package analytics

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// Series granularities (the granularity parameter of the overview and of
// a tool's detail).
const (
	GranularityDay  = "day"
	GranularityHour = "hour"
	// MaxHourlyDays bounds the range of an hourly series: 14 days are 336
	// entries.
	MaxHourlyDays = 14
)

// CheckGranularity validates the granularity parameter against the range:
// "" or day, or hour for ranges of at most MaxHourlyDays days (longer:
// ERANGETOOLARGE on query.granularity). It reports whether the series is
// hourly.
func CheckGranularity(g string, r Range) (hourly bool, err error) {
	switch g {
	case "", GranularityDay:
		return false, nil
	case GranularityHour:
		if n := r.NumDays(); n > MaxHourlyDays {
			return false, telemetry.FieldError(telemetry.ERANGETOOLARGE, "query.granularity",
				"An hourly series covers at most %d days; %s to %s covers %d.", MaxHourlyDays, r.FromDate(), r.ToDate(), n)
		}
		return true, nil
	}
	return false, telemetry.FieldError(telemetry.EINVALID, "query.granularity", "granularity must be day or hour.")
}

// Hours returns the first instant of every hour of the range, oldest
// first: the skeleton of a zero-filled hourly series.
func (r Range) Hours() []time.Time {
	hours := make([]time.Time, 0, r.NumDays()*24)
	for h := r.From; h.Before(r.End()); h = h.Add(time.Hour) {
		hours = append(hours, h)
	}
	return hours
}

// Previous returns the period compare=previous compares with: as many days
// as the range, ending the day before From.
func (r Range) Previous() Range { return r.Before(r.NumDays()) }

// PreviousOf names the previous period of r.
func PreviousOf(r Range) *PreviousRange {
	p := r.Previous()
	return &PreviousRange{From: p.FromDate(), To: p.ToDate()}
}

// ComparePrevious is the compare parameter's one value.
const ComparePrevious = "previous"

// OverviewPreviousOf is the headline figures of p, the overview of the
// previous period.
func OverviewPreviousOf(p *Overview) *OverviewPrevious {
	return &OverviewPrevious{From: p.From, To: p.To, OverviewFigures: p.OverviewFigures}
}

// ToolPreviousOf is the headline figures of p, a tool over the previous
// period.
func ToolPreviousOf(p *ToolDetail) *ToolPrevious {
	return &ToolPrevious{From: p.From, To: p.To, ToolHeadline: p.ToolHeadline}
}

// SetPreviousTools gives each tool of l its figures in p, the tools of
// the previous period of r (zeros for a tool without a call then).
func SetPreviousTools(r Range, l, p *ToolList) {
	by := make(map[string]ToolSummary, len(p.Items))
	for _, t := range p.Items {
		by[t.Name] = t
	}
	l.Previous = PreviousOf(r)
	for i := range l.Items {
		t := by[l.Items[i].Name]
		l.Items[i].Previous = &t.ToolFigures
	}
}

// AddPreviousBreakdown reads the previous period's figures of the values
// of b (q.Only set to them) and gives each item its figures then (zeros
// for a value without an item then). Other gets none: the values it sums
// are not listed.
func AddPreviousBreakdown(ctx context.Context, rd Reader, mcpID string, r Range, q BreakdownQuery, b *Breakdown) error {
	b.Previous = PreviousOf(r)
	if len(b.Items) == 0 {
		return nil
	}
	q.Only = make([]string, len(b.Items))
	for i, it := range b.Items {
		q.Only[i] = it.Value
	}
	p, err := rd.Breakdown(ctx, mcpID, r.Previous(), q)
	if err != nil {
		return err
	}
	by := make(map[string]Figures, len(p.Items))
	for _, it := range p.Items {
		by[it.Value] = it.Figures
	}
	for i := range b.Items {
		f := by[b.Items[i].Value]
		b.Items[i].Previous = &f
	}
	return nil
}
