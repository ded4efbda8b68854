package clickhouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

// ProbeResultRow is one check as stored in probe_results.
type ProbeResultRow struct {
	AccountID, MCPID, ProbeID string
	Check                     alerting.ProbeCheck
}

// InsertProbeResults stores checks, as INSERT ... SELECT of literal rows
// (UNION ALL), up to 200 a statement (the prober buffers them, so a
// thousand probes make a few inserts a minute, not a part per check).
func (db *Sink) InsertProbeResults(ctx context.Context, rows []ProbeResultRow) error {
	for len(rows) > 0 {
		n := min(len(rows), 200)
		if err := db.insertProbeResults(ctx, rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func (db *Sink) insertProbeResults(ctx context.Context, rows []ProbeResultRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s.probe_results (account_id, mcp_id, probe_id, at, at_ms, is_up, latency_ms, error, error_kind, protocol_version, schema_hash) ", db.db)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		c := r.Check
		up := 0
		if c.OK {
			up = 1
		}
		at := c.At.UTC()
		fmt.Fprintf(&b, "SELECT %s, %s, %s, %s, toUInt16(%d), toUInt8(%d), toFloat64(%s), %s, %s, %s, %s", QuoteString(r.AccountID), QuoteString(r.MCPID), QuoteString(r.ProbeID),
			timeLit(at), at.Nanosecond()/int(time.Millisecond), up, strconv.FormatFloat(c.LatencyMs, 'f', 3, 64),
			QuoteString(c.ErrorText()), QuoteString(c.ErrorKind), QuoteString(c.ProtocolVersion), QuoteString(c.SchemaHash))
	}
	return db.ExecWrite(ctx, b.String())
}

// probeCursor is the results list's cursor: the last item's time in Unix
// milliseconds.
type probeCursor struct {
	Ms int64 `json:"ms"`
}

// ProbeResults reads a page of one probe's checks in [from, to], newest
// first (limit 1 to 1000).
func (db *Reads) ProbeResults(ctx context.Context, mcpID, probeID string, f alerting.ProbeResultFilter) (alerting.ProbeResultPage, error) {
	page := alerting.ProbeResultPage{Items: []alerting.ProbeResult{}}
	cond := ""
	if f.Cursor != "" {
		var c probeCursor
		if err := telemetry.DecodeCursor(f.Cursor, &c); err != nil || c.Ms <= 0 {
			if err == nil {
				err = telemetry.BadCursor()
			}
			return page, err
		}
		cond = fmt.Sprintf(" AND toUInt64(at) * 1000 + at_ms < %d", c.Ms)
	}
	q := fmt.Sprintf(`SELECT at, at_ms, is_up, latency_ms, error, CAST(protocol_version AS String), schema_hash
		FROM %s.probe_results WHERE mcp_id = ? AND probe_id = ? AND at >= %s AND at <= %s%s
		ORDER BY at DESC, at_ms DESC LIMIT %d`, db.db, timeLit(f.From), timeLit(f.To), cond, f.Limit+1)
	var at time.Time
	var ms uint16
	var up uint8
	var r alerting.ProbeResult
	var errText, proto, hash string
	err := db.query(ctx, "probe results", q, []any{mcpID, probeID}, func() []any {
		if !at.IsZero() {
			page.Items = append(page.Items, probeResult(at, ms, up, r.LatencyMs, errText, proto, hash))
		}
		return []any{&at, &ms, &up, &r.LatencyMs, &errText, &proto, &hash}
	})
	if err != nil {
		return page, err
	}
	if !at.IsZero() {
		page.Items = append(page.Items, probeResult(at, ms, up, r.LatencyMs, errText, proto, hash))
	}
	if len(page.Items) > f.Limit {
		page.Items = page.Items[:f.Limit]
		last := page.Items[len(page.Items)-1].At
		next := telemetry.EncodeCursor(probeCursor{Ms: last.UnixMilli()})
		page.NextCursor = &next
	}
	return page, nil
}

func probeResult(at time.Time, ms uint16, up uint8, latency float64, errText, proto, hash string) alerting.ProbeResult {
	r := alerting.ProbeResult{At: at.UTC().Add(time.Duration(ms) * time.Millisecond), Status: alerting.ProbeDown, LatencyMs: latency}
	if up == 1 {
		r.Status = alerting.ProbeUp
	}
	if errText != "" {
		r.Error = &errText
	}
	if proto != "" {
		r.ProtocolVersion = &proto
	}
	if hash != "" {
		r.SchemaHash = &hash
	}
	return r
}

// ProbeUptimes reads, per probe of the MCPs' probes, the share of good
// checks over the 24 hours, 7 and 30 days before now.
func (db *Reads) ProbeUptimes(ctx context.Context, mcpIDs, probeIDs []string, now time.Time) (map[string]alerting.ProbeUptime, error) {
	out := map[string]alerting.ProbeUptime{}
	if len(probeIDs) == 0 {
		return out, nil
	}
	d1, d7 := timeLit(now.Add(-24*time.Hour)), timeLit(now.Add(-7*24*time.Hour))
	q := fmt.Sprintf(`SELECT probe_id, countIf(is_up = 1 AND at >= %[2]s), countIf(at >= %[2]s), countIf(is_up = 1 AND at >= %[3]s),
			countIf(at >= %[3]s), sum(is_up), count()
		FROM %[1]s.probe_results WHERE mcp_id IN (%[4]s) AND probe_id IN (%[5]s) AND at >= %[6]s AND at <= %[7]s
		GROUP BY probe_id`, db.db, d1, d7, quoteList(mcpIDs), quoteList(probeIDs), timeLit(now.Add(-30*24*time.Hour)), timeLit(now))
	var id string
	var u1, n1, u7, n7, u30, n30 uint64
	rows := map[string][6]uint64{}
	err := db.query(ctx, "probe uptime", q, nil, func() []any {
		if id != "" {
			rows[id] = [6]uint64{u1, n1, u7, n7, u30, n30}
		}
		return []any{&id, &u1, &n1, &u7, &n7, &u30, &n30}
	})
	if err != nil {
		return nil, err
	}
	if id != "" {
		rows[id] = [6]uint64{u1, n1, u7, n7, u30, n30}
	}
	for id, v := range rows {
		out[id] = alerting.ProbeUptime{Day: share(v[0], v[1]), Week: share(v[2], v[3]), Month: share(v[4], v[5])}
	}
	return out, nil
}

func share(good, all uint64) *float64 {
	if all == 0 {
		return nil
	}
	v := float64(good) / float64(all)
	return &v
}

// DropProbeResultsBefore drops the day partitions of probe_results before
// cutoff's day on every host: the probes' own retention
// (probes.result_days), which 18.16 cannot express as a TTL.
func (db *Lifecycle) DropProbeResultsBefore(ctx context.Context, cutoff time.Time) error {
	all, err := tables()
	if err != nil {
		return err
	}
	var t lifecycleTable
	for _, x := range all {
		if x.name == "probe_results" {
			t = x
		}
	}
	table := db.local("probe_results")
	name := table[strings.LastIndexByte(table, '.')+1:]
	return wrapErr("probe retention", db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		rows, err := conn.Query(ctx, `SELECT DISTINCT partition_id FROM system.parts WHERE database = ? AND table = ? AND active`, db.db, name)
		if err != nil {
			return err
		}
		var parts []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			if p, ok := t.partitionBefore(id, cutoff); ok {
				parts = append(parts, p)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, p := range parts {
			if err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP PARTITION %s", table, p)); err != nil {
				return err
			}
		}
		return nil
	}))
}
