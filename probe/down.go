package probe

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

// MaxDownRange bounds to - from of a down-periods read: the longest
// range the overview charts show.
const MaxDownRange = 400 * 24 * time.Hour

// DownPeriods implements alerting.ProbeDowntimeService: the failed
// five-minute steps of the MCP's probes in [from, to] (default: the 24
// hours before now), joined into periods.
func (s *Service) DownPeriods(ctx context.Context, accountID, mcpID string, from, to time.Time) (alerting.DownPeriodList, error) {
	list := alerting.DownPeriodList{Items: []alerting.DownPeriod{}}
	ps, err := s.Store.Probes(ctx, accountID, mcpID)
	if err != nil {
		return list, err
	}
	if to.IsZero() {
		to = time.Now().UTC()
	}
	if from.IsZero() {
		from = to.Add(-24 * time.Hour)
	}
	switch {
	case from.After(to):
		return list, telemetry.FieldError(telemetry.EINVALIDRANGE, "query.from", "must not be after to")
	case to.Sub(from) > MaxDownRange:
		return list, telemetry.FieldError(telemetry.ERANGETOOLARGE, "query.from", "a down-periods read covers at most 400 days")
	}
	if len(ps) == 0 {
		return list, nil
	}
	buckets, err := s.Results.ProbeDownBuckets(ctx, mcpID, from, to)
	if err != nil {
		return list, err
	}
	if len(buckets) > alerting.MaxDownBuckets {
		buckets, list.Truncated = buckets[:alerting.MaxDownBuckets], true
	}
	list.Items = alerting.MergeDownBuckets(buckets)
	return list, nil
}
