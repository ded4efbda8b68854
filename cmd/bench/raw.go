package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// rawQueries returns, for each read endpoint, the plain aggregates over the
// raw events table that compute the same figures: what a service without
// rollups would run. Every row of every answer is read, as the service
// reads its rollups. [from, to) is the range in whole UTC days.
func rawQueries(db, mcp, tool string, from, to time.Time) map[string][]string {
	scope := fmt.Sprintf("mcp_id = %s AND ts >= %s AND ts < %s", quote(mcp), timeLit(from), timeLit(to))
	calls := scope + " AND method = 'tools/call'"
	events := db + ".events"
	latency := "sumIf(duration_ms, has_duration = 1) / greatest(sum(has_duration), 1) AS avg_ms"
	toolsQuery := `SELECT name, count() AS calls, sum(is_error) AS errors, ` + latency + `,
		quantilesTDigestIf(0.5, 0.95)(duration_ms, has_duration) AS q, uniq(session_id) AS sessions, max(ts) AS last_seen
		FROM ` + events + ` WHERE ` + calls + ` GROUP BY name ORDER BY calls DESC`
	idleFrom := from.AddDate(0, 0, -28)
	return map[string][]string{
		"overview": {`SELECT toDate(ts) AS day, count(), sum(is_error), uniq(session_id), uniq(user_key), ` + latency + `,
			quantilesTDigestIf(0.5, 0.95, 0.99)(duration_ms, has_duration)
			FROM ` + events + ` WHERE ` + scope + ` GROUP BY day WITH TOTALS ORDER BY day`},
		"tools": {toolsQuery},
		"tool detail": {
			`SELECT toDate(ts) AS day, count(), sum(is_error), ` + latency + `, quantilesTDigestIf(0.5, 0.95, 0.99)(duration_ms, has_duration)
			FROM ` + events + ` WHERE ` + calls + ` AND name = ` + quote(tool) + ` GROUP BY day WITH TOTALS ORDER BY day`,
			`SELECT error_type, count() AS n, argMax(error_message, ts) FROM ` + events + ` WHERE ` + calls +
				` AND name = ` + quote(tool) + ` AND is_error = 1 GROUP BY error_type ORDER BY n DESC`,
			`SELECT CAST(client_name AS String) AS c, count() AS n FROM ` + events + ` WHERE ` + calls +
				` AND name = ` + quote(tool) + ` GROUP BY c ORDER BY n DESC`,
		},
		"insights": {
			toolsQuery,
			`SELECT name, error_type, count() AS n, argMax(error_message, ts) FROM ` + events + ` WHERE ` + scope +
				` AND is_error = 1 GROUP BY name, error_type ORDER BY n DESC LIMIT 10`,
			`SELECT CAST(client_name AS String) AS c, CAST(client_version AS String) AS v, count(), uniq(session_id)
			FROM ` + events + ` WHERE ` + scope + ` GROUP BY c, v`,
			`SELECT DISTINCT name FROM ` + events + ` WHERE mcp_id = ` + quote(mcp) + ` AND method = 'tools/call' AND ts >= ` +
				timeLit(idleFrom) + ` AND ts < ` + timeLit(from) + ` AND name NOT IN (SELECT DISTINCT name FROM ` + events +
				` WHERE ` + calls + `)`,
		},
		"sessions": {`SELECT session_id, min(toUInt64(ts) * 1000 + ts_ms) AS started, max(ts), count(), sum(is_error),
			argMin(CAST(client_name AS String), ts), argMin(CAST(client_version AS String), ts), argMin(user_id, ts)
			FROM ` + events + ` WHERE ` + scope + ` GROUP BY session_id ORDER BY started DESC LIMIT 50`},
	}
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func timeLit(t time.Time) string {
	return "toDateTime('" + t.UTC().Format("2006-01-02 15:04:05") + "', 'UTC')"
}

// runRaw runs the statements one after another, reading every row.
func runRaw(ctx context.Context, conn driver.Conn, stmts []string) error {
	for _, q := range stmts {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
	}
	return nil
}
