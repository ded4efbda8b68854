package analytics

import (
	"time"

	"github.com/mcpscope/telemetry"
)

// Date range rules of the metric reads (contract, section Metric reads).
const (
	// DateLayout is the wire format of a date: one whole UTC day.
	DateLayout = "2006-01-02"
	// DefaultRangeDays is the length of the range when from is omitted: to
	// and the six days before it, one week.
	DefaultRangeDays = 7
	// MaxRangeDays bounds a range, counting both ends: three years and a
	// leap day, so that "the last three years" always fits.
	MaxRangeDays = 1096
)

const day = 24 * time.Hour

// Range is an inclusive range of whole UTC days. The zero value is not a
// valid range; build one with ParseRange or NewRange.
type Range struct {
	// From is midnight UTC of the first day.
	From time.Time
	// To is midnight UTC of the last day; the range includes all of it, up
	// to 23:59:59.999... UTC.
	To time.Time
	// KeptFrom, when set, is midnight UTC of the oldest day the account's
	// retention keeps: stores read nothing before it, so those days answer
	// zeros even before the nightly enforcement deleted them (and a month
	// rollup straddling it is not used). The echoed from and the day
	// series still cover From..To.
	KeptFrom time.Time
}

// Lower returns the first day a store reads: From, or KeptFrom when later.
func (r Range) Lower() time.Time {
	if r.KeptFrom.After(r.From) {
		return r.KeptFrom
	}
	return r.From
}

// KeptFrom returns midnight UTC of the oldest day kept by a retention of
// days UTC days (today included), the zero time for 0 (kept forever).
func KeptFrom(days int, today time.Time) time.Time {
	if days <= 0 {
		return time.Time{}
	}
	return UTCDay(today).AddDate(0, 0, -(days - 1))
}

// NewRange returns the range of the UTC days holding from and to. It does
// not validate; callers inside the service use it with trusted dates.
func NewRange(from, to time.Time) Range {
	return Range{From: UTCDay(from), To: UTCDay(to)}
}

// UTCDay returns midnight UTC of the day holding t.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ParseRange reads the from and to query parameters of a metric read. An
// empty to means today (the UTC day of today); an empty from means to minus
// six days. It fails with EINVALIDDATE (query.from or query.to) for a value
// that is not a YYYY-MM-DD date, EINVALIDRANGE when from is after to, and
// ERANGETOOLARGE when the range spans more than MaxRangeDays days.
func ParseRange(from, to string, today time.Time) (Range, error) {
	var r Range
	var err error
	if to == "" {
		r.To = UTCDay(today)
	} else if r.To, err = parseDate(to); err != nil {
		return Range{}, telemetry.FieldError(telemetry.EINVALIDDATE, "query.to", "to must be a date written YYYY-MM-DD, not %q.", to)
	}
	if from == "" {
		r.From = r.To.AddDate(0, 0, -(DefaultRangeDays - 1))
	} else if r.From, err = parseDate(from); err != nil {
		return Range{}, telemetry.FieldError(telemetry.EINVALIDDATE, "query.from", "from must be a date written YYYY-MM-DD, not %q.", from)
	}
	if r.From.After(r.To) {
		return Range{}, telemetry.FieldError(telemetry.EINVALIDRANGE, "query.from", "from (%s) must not be after to (%s).", r.FromDate(), r.ToDate())
	}
	if n := r.NumDays(); n > MaxRangeDays {
		return Range{}, telemetry.FieldError(telemetry.ERANGETOOLARGE, "query.from", "A range covers at most %d days; %s to %s covers %d.", MaxRangeDays, r.FromDate(), r.ToDate(), n)
	}
	return r, nil
}

// parseDate accepts exactly YYYY-MM-DD (time.Parse alone would also take
// some single-digit forms in other layouts; the length check keeps it strict).
func parseDate(s string) (time.Time, error) {
	if len(s) != len(DateLayout) {
		return time.Time{}, &time.ParseError{Layout: DateLayout, Value: s}
	}
	return time.Parse(DateLayout, s)
}

// FromDate returns the first day as YYYY-MM-DD.
func (r Range) FromDate() string { return r.From.Format(DateLayout) }

// ToDate returns the last day as YYYY-MM-DD.
func (r Range) ToDate() string { return r.To.Format(DateLayout) }

// End returns the exclusive end of the range: midnight UTC after the last
// day. An item at 23:59:59.999Z of the last day is before End.
func (r Range) End() time.Time { return r.To.Add(day) }

// NumDays returns the number of days in the range, counting both ends.
func (r Range) NumDays() int {
	return int(r.To.Sub(r.From)/day) + 1
}

// Days returns every day of the range as YYYY-MM-DD, oldest first: the
// skeleton of a zero-filled day series.
func (r Range) Days() []string {
	days := make([]string, 0, r.NumDays())
	for d := r.From; !d.After(r.To); d = d.Add(day) {
		days = append(days, d.Format(DateLayout))
	}
	return days
}

// Before returns the n days just before the range (for "idle" comparisons).
func (r Range) Before(n int) Range {
	return Range{From: r.From.AddDate(0, 0, -n), To: r.From.AddDate(0, 0, -1), KeptFrom: r.KeptFrom}
}
