package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestDeletePersonAndMCP deletes one person's data (their raw items and
// sessions go, someone else's stay, the rollup counts stay) and then the
// whole MCP (every raw and rollup row goes, in the background).
func TestDeletePersonAndMCP(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Storage.DeletionPoll = 200 * time.Millisecond
	cfg.Export.PerMinute = 1000 // the test polls through the export
	_, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, key := a.newTenant("del")
	tokenB, mcpB, _ := a.newTenant("other")

	person := "ada/lovelace@example.com" // a slash: percent-encoded in the path
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	var items []map[string]any
	for i, u := range []string{person, person, person, "u-2", "u-2"} {
		items = append(items, map[string]any{"id": fmt.Sprint("i", i), "timestamp": now, "session_id": fmt.Sprint("s-", u, "-", i%2),
			"method": "tools/call", "name": "search", "user_id": u})
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != 5 {
		t.Fatalf("ingest: %d %v", status, res)
	}
	eventually(t, 10*time.Second, func() error {
		if n := countIDs(exportedItems(t, base, mcp, token)); n != 5 {
			return fmt.Errorf("%d items stored", n)
		}
		return nil
	})

	path := "/v1/mcps/" + mcp + "/users/" + url.PathEscape(person)
	if status, res := a.do("DELETE", "/v1/mcps/"+mcpB+"/users/u-2", token, nil); status != 404 || res["code"] != "not_found" {
		t.Errorf("another account's MCP: %d %v", status, res)
	}
	res := a.must(202, "DELETE", path, token, nil)
	id, _ := res["id"].(string)
	if id == "" || res["status"] != "pending" || len(res) != 2 {
		t.Fatalf("202 body: %v", res)
	}
	if status, got := a.do("GET", "/v1/account/deletions/"+id, tokenB, nil); status != 404 || got["code"] != "not_found" {
		t.Errorf("another account's deletion: %d %v", status, got)
	}
	var d map[string]any
	eventually(t, 30*time.Second, func() error {
		d = a.must(200, "GET", "/v1/account/deletions/"+id, token, nil)
		if d["status"] != "done" {
			return fmt.Errorf("deletion: %v", d)
		}
		return nil
	})
	if d["kind"] != "user" || d["user_id"] != person || d["mcp_id"] != mcp || d["finished_at"] == nil {
		t.Errorf("deletion: %v", d)
	}
	left := exportedItems(t, base, mcp, token)
	if countIDs(left) != 2 || left["i3"]["user_id"] != "u-2" || left["i4"]["user_id"] != "u-2" {
		t.Errorf("after the deletion the export holds %v", left)
	}
	sessions := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions", token, nil)["items"].([]any)
	for _, s := range sessions {
		if s.(map[string]any)["user_id"] == person {
			t.Errorf("a session of the deleted person is still listed: %v", s)
		}
	}
	if len(sessions) != 2 {
		t.Errorf("sessions after the deletion: %v", sessions)
	}
	// The rollup counts keep what they aggregated (documented).
	if o := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview", token, nil); num(o["calls"]) != 5 {
		t.Errorf("overview calls: %v", o["calls"])
	}

	// Deleting the MCP deletes its telemetry in the background.
	conn, err := ch.Open(&ch.Options{Addr: cfg.ClickHouse.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Every table the server has with an mcp_id column (views aside), but
	// the usage counts, which outlive the MCP.
	var tables []string
	r, err := conn.Query(context.Background(), `SELECT DISTINCT table FROM system.columns WHERE database = ? AND name = 'mcp_id'
		AND table IN (SELECT name FROM system.tables WHERE database = ? AND engine NOT LIKE '%View' AND name NOT IN ('usage_daily', 'usage_daily_local'))`,
		cfg.ClickHouse.Database, cfg.ClickHouse.Database)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var name string
		_ = r.Scan(&name)
		tables = append(tables, name)
	}
	r.Close()
	if !slices.Contains(tables, "session_span") || !slices.Contains(tables, "breakdown_daily") || !slices.Contains(tables, "mcp_hourly") {
		t.Fatalf("tables with an mcp_id column: %v", tables)
	}
	a.must(204, "DELETE", "/v1/mcps/"+mcp, token, nil)
	eventually(t, 30*time.Second, func() error {
		for _, table := range tables {
			var n uint64
			q := fmt.Sprintf("SELECT count() FROM %s.%s WHERE mcp_id = ?", cfg.ClickHouse.Database, table)
			if err := conn.QueryRow(context.Background(), q, mcp).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				return fmt.Errorf("%s still holds %d rows of the deleted MCP", table, n)
			}
		}
		return nil
	})
}

// TestDeletionWaitsForTheLog deletes a person's data while their items are
// still in the write-ahead log (a long flush interval): the deletion waits
// for the log to flush them, so they go too, and it is done only once
// they are gone.
func TestDeletionWaitsForTheLog(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Storage.DeletionPoll = 100 * time.Millisecond
	cfg.Ingest.FlushInterval = 3 * time.Second
	cfg.Export.PerMinute = 1000
	_, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, key := a.newTenant("logged")
	var items []map[string]any
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	for i, u := range []string{"grace", "grace", "u-2"} {
		items = append(items, map[string]any{"id": fmt.Sprint("i", i), "timestamp": now, "session_id": "s-" + u,
			"method": "tools/call", "name": "search", "user_id": u})
	}
	if status, res := postIngest(t, base, key, items, false); status != 202 || num(res["accepted"]) != 3 {
		t.Fatalf("ingest: %d %v", status, res)
	}
	id := a.must(202, "DELETE", "/v1/mcps/"+mcp+"/users/grace", token, nil)["id"].(string)
	eventually(t, 30*time.Second, func() error {
		if d := a.must(200, "GET", "/v1/account/deletions/"+id, token, nil); d["status"] != "done" {
			return fmt.Errorf("deletion: %v", d)
		}
		return nil
	})
	if left := exportedItems(t, base, mcp, token); countIDs(left) != 1 || left["i2"]["user_id"] != "u-2" {
		t.Errorf("once the deletion is done the export holds %v", left)
	}
}

// countIDs counts the items of exportedItems (each is also keyed by
// session).
func countIDs(m map[string]map[string]any) int {
	n := 0
	for k := range m {
		if !strings.HasPrefix(k, "session:") {
			n++
		}
	}
	return n
}

// TestDeletionRequestsRateLimited: past storage.deletions_per_hour, a
// person's deletion and an MCP's deletion answer 429 rate_limited with
// Retry-After, and the refused MCP stays; another account is not limited.
func TestDeletionRequestsRateLimited(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Storage.DeletionsPerHour = 2
	_, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, _ := a.newTenant("limited")
	tokenB, mcpB, _ := a.newTenant("unlimited")
	a.must(202, "DELETE", "/v1/mcps/"+mcp+"/users/u-1", token, nil)
	a.must(202, "DELETE", "/v1/mcps/"+mcp+"/users/u-2", token, nil)
	refused := func(method, path string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		secs, _ := strconv.Atoi(res.Header.Get("Retry-After"))
		if res.StatusCode != 429 || body["code"] != "rate_limited" || secs < 1 || secs > 3600 {
			t.Errorf("%s %s: %d Retry-After %q %v", method, path, res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	refused("DELETE", "/v1/mcps/"+mcp+"/users/u-3")
	refused("DELETE", "/v1/mcps/"+mcp)
	a.must(200, "GET", "/v1/mcps/"+mcp, token, nil) // the refused deletion left it
	// An unknown MCP is still 404, not 429.
	if status, res := a.do("DELETE", "/v1/mcps/"+mcpB, token, nil); status != 404 {
		t.Errorf("another account's MCP: %d %v", status, res)
	}
	a.must(202, "DELETE", "/v1/mcps/"+mcpB+"/users/u-1", tokenB, nil)
	a.must(204, "DELETE", "/v1/mcps/"+mcpB, tokenB, nil)
}
