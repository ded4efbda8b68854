package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// ComputeNightly implements analytics.NightlyService with one INSERT
// SELECT over user_daily, the exact per-day user sets. Per MCP and user it
// counts the days active in the 28-day window and whether the user was
// active in days -13..-7 (cohort) and -6..0 (returning); per MCP:
//
//	active_users_28d = users
//	stickiness       = sum(days active) / 28 / users  (mean daily users / users)
//	retention_7d     = |cohort ∩ returning| / |cohort|, absent if no cohort
//
// The rows carry a fresh version, so a re-run replaces the day's figures;
// a row in nightly_runs then marks the day as done.
func (db *Lifecycle) ComputeNightly(ctx context.Context, day time.Time) (int, error) {
	d := analytics.UTCDay(day)
	version := uint64(time.Now().UnixNano())
	at := func(offset int) string { return dateLit(d.AddDate(0, 0, offset)) }
	q := fmt.Sprintf(`INSERT INTO %[1]s.nightly (mcp_id, day, active_users_28d, stickiness, retention_7d, has_retention, version)
		SELECT mcp_id, %[2]s, count(), sum(days_active) / (%[3]d * count()),
			if(sum(in_cohort) = 0, 0., sum(in_cohort * returning) / sum(in_cohort)), sum(in_cohort) > 0, toUInt64(%[4]d)
		FROM (
			SELECT mcp_id, user_key, uniqExact(day) AS days_active,
				max(day >= %[5]s AND day <= %[6]s) AS in_cohort,
				max(day >= %[7]s) AS returning
			FROM %[1]s.user_daily
			WHERE day >= %[8]s AND day <= %[2]s AND mcp_id NOT LIKE '~wal/%%'
			GROUP BY mcp_id, user_key
		)
		GROUP BY mcp_id`,
		db.db, at(0), analytics.NightlyWindowDays, version,
		at(-13), at(-7), at(-6), at(-(analytics.NightlyWindowDays - 1)))
	if err := db.conn.Exec(db.writeContext(ctx, nil), q); err != nil {
		return 0, wrapErr("nightly", err)
	}
	var mcps uint64
	if err := db.conn.QueryRow(ctx, fmt.Sprintf("SELECT uniqExact(mcp_id) FROM %s.nightly WHERE day = %s AND version = %d",
		db.db, at(0), version)).Scan(&mcps); err != nil {
		return 0, wrapErr("nightly", err)
	}
	if err := db.conn.Exec(db.writeContext(ctx, nil), fmt.Sprintf("INSERT INTO %s.nightly_runs (day, mcps, version) SELECT %s, %d, %d",
		db.db, at(0), mcps, version)); err != nil {
		return 0, wrapErr("nightly", err)
	}
	return int(mcps), nil
}

// NightlyLastDay implements analytics.NightlyService (on the core: the
// nightly figures of Reads need it too).
func (db *core) NightlyLastDay(ctx context.Context) (time.Time, bool, error) {
	var (
		last time.Time
		runs uint64 // days run: unlike count(), the same before and after merges
	)
	if err := db.conn.QueryRow(ctx, "SELECT max(day), uniqExact(day) FROM "+db.db+".nightly_runs").Scan(&last, &runs); err != nil {
		return time.Time{}, false, wrapErr("nightly last day", err)
	}
	if runs == 0 {
		return time.Time{}, false, nil
	}
	return analytics.UTCDay(last), true, nil
}

// Nightly returns the figures Overview and Insights show: the MCP's row of
// the last pass, newest version first. An MCP with no row for that day had
// no users in its window: zero users, zero stickiness, no retention.
func (db *Reads) Nightly(ctx context.Context, mcpID string) (*analytics.Nightly, *string, error) {
	last, ok, err := db.NightlyLastDay(ctx)
	if err != nil || !ok {
		return &analytics.Nightly{}, nil, err
	}
	var (
		active, found uint64
		stick, ret    float64
		hasRet        uint8
	)
	q := fmt.Sprintf(`SELECT count(), argMax(active_users_28d, version), argMax(stickiness, version),
			argMax(retention_7d, version), argMax(has_retention, version)
		FROM %s.nightly WHERE mcp_id = ? AND day = %s`, db.db, dateLit(last))
	if err := db.conn.QueryRow(ctx, q, mcpID).Scan(&found, &active, &stick, &ret, &hasRet); err != nil {
		return nil, nil, wrapErr("nightly", err)
	}
	n := &analytics.Nightly{ActiveUsers28d: new(int64), Stickiness: new(float64)}
	if found > 0 {
		*n.ActiveUsers28d, *n.Stickiness = int64(active), stick
		if hasRet == 1 {
			n.Retention7d = &ret
		}
	}
	asOf := last.Format(analytics.DateLayout)
	return n, &asOf, nil
}
