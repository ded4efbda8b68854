package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestRetention keeps 60 days on the installation and 30 for one account:
// reads answer zeros beyond retention at once, a dry run changes nothing,
// and the pass removes exactly the right days of each account from the raw
// table and the rollups.
func TestRetention(t *testing.T) {
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Storage.RetentionDays = 60
	m, base := startMain(t, cfg)
	a := api{t, base}
	tokenA, mcpA, _ := a.newTenant("short")
	tokenB, mcpB, _ := a.newTenant("long")
	accA := a.must(200, "GET", "/v1/account", tokenA, nil)["id"].(string)
	accB := a.must(200, "GET", "/v1/account", tokenB, nil)["id"].(string)

	today := time.Now().UTC().Truncate(24 * time.Hour)
	ages := []int{0, 10, 29, 30, 45, 59, 60, 70, 100}
	var rows []analytics.StoredRow
	for _, t := range []struct{ acc, mcp string }{{accA, mcpA}, {accB, mcpB}} {
		for _, age := range ages {
			ts := today.AddDate(0, 0, -age).Add(12 * time.Hour)
			rows = append(rows, analytics.StoredRow{AccountID: t.acc, MCPID: t.mcp, ReceivedAt: ts, Item: analytics.Item{
				ID: fmt.Sprint("d", age), Timestamp: ts, SessionID: fmt.Sprint("s", age), Method: "tools/call", Name: "x", Status: "ok"}})
		}
	}
	if err := m.CH.InsertRows(context.Background(), rows); err != nil {
		t.Fatal(err)
	}

	if status, res := a.do("PATCH", "/v1/account", tokenA, map[string]any{"retention_days": 61}); status != 422 || res["code"] != "invalid" {
		t.Errorf("61 days on a 60-day installation: %d %v", status, res)
	}
	acc := a.must(200, "PATCH", "/v1/account", tokenA, map[string]any{"retention_days": 30})
	if num(acc["retention_days"]) != 30 || num(acc["effective_retention_days"]) != 30 || acc["kept_from"] != today.AddDate(0, 0, -29).Format("2006-01-02") {
		t.Fatalf("account A: %v", acc)
	}
	accB2 := a.must(200, "GET", "/v1/account", tokenB, nil)
	if accB2["retention_days"] != nil || num(accB2["effective_retention_days"]) != 60 {
		t.Fatalf("account B: %v", accB2)
	}

	// Reads clamp to retention before anything is deleted (a new login
	// carries the new setting; the session reads it on every request).
	rangeQ := "?from=" + today.AddDate(0, 0, -100).Format("2006-01-02") + "&to=" + today.Format("2006-01-02")
	calls := func(token, mcp string) float64 {
		return num(a.must(200, "GET", "/v1/mcps/"+mcp+"/overview"+rangeQ, token, nil)["calls"])
	}
	if got := calls(tokenA, mcpA); got != 3 {
		t.Errorf("A reads %v calls over 100 days, want 3 (ages 0, 10, 29)", got)
	}
	if got := calls(tokenB, mcpB); got != 6 {
		t.Errorf("B reads %v calls over 100 days, want 6 (ages up to 59)", got)
	}
	_, body := getRaw(t, base, "/v1/mcps/"+mcpA+"/export"+rangeQ, tokenA)
	if n := strings.Count(body, "\n"); n != 3 {
		t.Errorf("A exports %d items, want 3", n)
	}
	// A raw breakdown (a filter other than status scans raw items), a
	// session timeline and the hourly series clamp the same way.
	for _, c := range []struct {
		token, mcp string
		want       float64
	}{{tokenA, mcpA, 3}, {tokenB, mcpB, 6}} {
		b := a.must(200, "GET", "/v1/mcps/"+c.mcp+"/breakdown"+rangeQ+"&by=method&tool=x", c.token, nil)
		items, _ := b["items"].([]any)
		if len(items) != 1 || num(items[0].(map[string]any)["calls"]) != c.want {
			t.Errorf("raw breakdown of %s over 100 days: %v, want %v calls", c.mcp, b["items"], c.want)
		}
	}
	for _, c := range []struct {
		token, mcp string
		want       int
	}{{tokenA, mcpA, 3}, {tokenB, mcpB, 6}} {
		page := a.must(200, "GET", "/v1/mcps/"+c.mcp+"/sessions"+rangeQ, c.token, nil)
		if items, _ := page["items"].([]any); len(items) != c.want || page["from"] != today.AddDate(0, 0, -100).Format("2006-01-02") {
			t.Errorf("sessions of %s over 100 days: %v, want %d", c.mcp, page, c.want)
		}
	}
	if status, res := a.do("GET", "/v1/mcps/"+mcpA+"/sessions/s45", tokenA, nil); status != 404 || res["code"] != "not_found" {
		t.Errorf("timeline of a session beyond retention: %d %v", status, res)
	}
	if tl := a.must(200, "GET", "/v1/mcps/"+mcpB+"/sessions/s45", tokenB, nil); num(tl["calls"]) != 1 {
		t.Errorf("timeline of a session within retention: %v", tl)
	}
	if status, res := a.do("GET", "/v1/mcps/"+mcpA+"/sessions/s45?from="+today.AddDate(0, 0, -50).Format("2006-01-02"), tokenA, nil); status != 404 {
		t.Errorf("timeline with from beyond retention: %d %v", status, res)
	}

	conn, err := ch.Open(&ch.Options{Addr: cfg.ClickHouse.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	days := func(table, col, mcp string) string {
		var ds []string
		q := fmt.Sprintf("SELECT DISTINCT toString(toDate(%s)) FROM %s.%s WHERE mcp_id = ?", col, cfg.ClickHouse.Database, table)
		r, err := conn.Query(context.Background(), q, mcp)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var d string
			_ = r.Scan(&d)
			ds = append(ds, d)
		}
		sort.Strings(ds)
		return strings.Join(ds, ",")
	}
	want := func(maxAge int) string {
		var ds []string
		for _, age := range ages {
			if age <= maxAge {
				ds = append(ds, today.AddDate(0, 0, -age).Format("2006-01-02"))
			}
		}
		sort.Strings(ds)
		return strings.Join(ds, ",")
	}
	all := want(1000)

	// The dry run through the command line, configured by the environment.
	t.Setenv("TELEMETRY_CLICKHOUSE_ADDR", strings.Join(cfg.ClickHouse.Addr, ","))
	t.Setenv("TELEMETRY_CLICKHOUSE_DATABASE", cfg.ClickHouse.Database)
	t.Setenv("TELEMETRY_CLICKHOUSE_CLUSTER", cfg.ClickHouse.Cluster)
	t.Setenv("TELEMETRY_POSTGRES_URL", cfg.Postgres.URL)
	t.Setenv("TELEMETRY_STORAGE_RETENTION_DAYS", "60")
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"retention", "--dry-run"}, &out, &errs); err != nil {
		t.Fatalf("telemetryd retention --dry-run: %v\n%s", err, errs.String())
	}
	// Ages 60, 70 and 100 of both accounts go with their partitions (the
	// insert ledger's marker rows are not counted); ages 30, 45 and 59 of A
	// by a delete.
	if s := out.String(); !strings.Contains(s, "(6 raw items)") || !strings.Contains(s, "would delete account "+accA+" (1 MCP) before "+
		today.AddDate(0, 0, -29).Format("2006-01-02")+" (3 raw items)") ||
		!strings.Contains(s, "would drop") ||
		strings.Contains(s, "account "+accB) || !strings.Contains(s, "nothing was changed") {
		t.Errorf("dry run output:\n%s", s)
	}
	if got := days("events", "ts", mcpA); got != all {
		t.Fatalf("the dry run changed events: %s", got)
	}
	t.Logf("dry run:\n%s", out.String())

	out.Reset()
	if ran, err := m.RunRetention(context.Background(), false, &out); err != nil || !ran {
		t.Fatalf("retention: %v %v\n%s", ran, err, out.String())
	}
	t.Logf("retention:\n%s", out.String())
	for _, c := range []struct {
		mcp    string
		maxAge int
	}{{mcpA, 29}, {mcpB, 59}} {
		for _, tc := range []struct{ table, col string }{{"events", "ts"}, {"mcp_daily", "day"}, {"tool_daily", "day"}, {"session_daily", "day"}, {"user_daily", "day"}} {
			eventually(t, 20*time.Second, func() error {
				if got, w := days(tc.table, tc.col, c.mcp), want(c.maxAge); got != w {
					return fmt.Errorf("%s of %s after retention: %s, want %s", tc.table, c.mcp, got, w)
				}
				return nil
			})
		}
	}
	// A second pass finds nothing left to do.
	out.Reset()
	if _, err := m.RunRetention(context.Background(), true, &out); err != nil || !strings.Contains(out.String(), "0 steps") {
		t.Errorf("second pass: %v\n%s", err, out.String())
	}
}
