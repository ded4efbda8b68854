package alerting

import (
	"context"
	"time"
)

// DownStep is the grain of the down periods: failed checks are counted
// per five minutes, and failed five minutes that follow each other make
// one period.
const DownStep = 5 * time.Minute

// MaxDownBuckets bounds the failed five-minute steps one read considers
// (a week of continuous failure); past it the answer is truncated.
const MaxDownBuckets = 2016

// DownBucket is one five-minute step with failed checks of an MCP's
// probes: its start, its first and last failed check, how many failed and
// one of their errors.
type DownBucket struct {
	Start, First, Last time.Time
	Checks             int
	Error              string
}

// DownPeriod is a stretch of time in which the MCP's probes failed: from
// the first failed check to the last one (equal for a single failure).
type DownPeriod struct {
	From   time.Time `json:"from" doc:"The first failed check of the period."`
	To     time.Time `json:"to" doc:"The last failed check of the period (the same as from for a single failed check)."`
	Checks int       `json:"checks" doc:"How many checks failed in the period (all the MCP's probes together)."`
	Error  string    `json:"error" doc:"The error of one failed check of the period, kind: detail."`
}

// DownPeriodList answers GET /v1/mcps/{id}/probes/down-periods.
type DownPeriodList struct {
	Items []DownPeriod `json:"items"`
	// Truncated: there were more failed steps in the range than one read
	// considers (MaxDownBuckets); the periods end at the last one read.
	Truncated bool `json:"truncated" doc:"True when the range held more failures than one read considers (a week of continuous failure); the periods stop at the last one read."`
}

// ProbeDowntimeService reads the MCP's down periods, for the marks on
// its overview charts.
type ProbeDowntimeService interface {
	// DownPeriods returns the periods in [from, to] in which a probe of
	// the MCP failed a check, oldest first. Returns
	// ENOTFOUND, EINVALIDRANGE, ERANGETOOLARGE.
	DownPeriods(ctx context.Context, accountID, mcpID string, from, to time.Time) (DownPeriodList, error)
}

// MergeDownBuckets makes periods of buckets (oldest first): buckets one
// step apart join the same period.
func MergeDownBuckets(buckets []DownBucket) []DownPeriod {
	out := []DownPeriod{}
	var prev time.Time
	for _, b := range buckets {
		if n := len(out); n > 0 && !b.Start.After(prev.Add(DownStep)) {
			out[n-1].To = b.Last
			out[n-1].Checks += b.Checks
		} else {
			out = append(out, DownPeriod{From: b.First, To: b.Last, Checks: b.Checks, Error: b.Error})
		}
		prev = b.Start
	}
	return out
}
