package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// ProbeDownBuckets reads the five-minute steps of [from, to] with failed
// checks of the MCP's probes, oldest first, at most
// alerting.MaxDownBuckets+1 (one more tells the caller it was cut).
func (db *Reads) ProbeDownBuckets(ctx context.Context, mcpID string, from, to time.Time) ([]alerting.DownBucket, error) {
	q := fmt.Sprintf(`SELECT toStartOfFiveMinute(at) AS step, min(at), max(at), count(), any(error)
		FROM %s.probe_results WHERE mcp_id = ? AND is_up = 0 AND at >= %s AND at <= %s
		GROUP BY step ORDER BY step LIMIT %d`, db.db, timeLit(from), timeLit(to), alerting.MaxDownBuckets+1)
	var out []alerting.DownBucket
	var b alerting.DownBucket
	var n uint64
	started := false
	err := db.query(ctx, "probe down steps", q, []any{mcpID}, func() []any {
		if started {
			b.Checks = int(n)
			out = append(out, b)
		}
		started = true
		return []any{&b.Start, &b.First, &b.Last, &n, &b.Error}
	})
	if err != nil {
		return nil, err
	}
	if started {
		b.Checks = int(n)
		out = append(out, b)
	}
	for i := range out {
		out[i].Start, out[i].First, out[i].Last = out[i].Start.UTC(), out[i].First.UTC(), out[i].Last.UTC()
	}
	return out, nil
}
