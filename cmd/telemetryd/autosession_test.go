package main

import (
	"fmt"
	"math/rand"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestStatelessSessions: items sent without a session_id, from two users
// over three hours with one long pause, in two payloads out of order, get
// the sessions of docs/sessions.md: user u-1 two (the 50-minute pause is
// longer than the 30-minute idle timeout), the user-less cursor client
// one (25-minute gaps), each with the id derived from the MCP, the
// identity and its first item; an item that sends a session_id keeps it.
// The sessions list, a timeline, the overview and the breakdown agree. With
// the MCP's idle timeout set to 60 minutes, the same traffic of u-1 is one
// session.
func TestStatelessSessions(t *testing.T) {
	t.Parallel()
	app, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-3*time.Hour - 10*time.Minute)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	type sent struct {
		min     int
		user    string // "" : the cursor client without a user id
		session string // sent session_id, usually none
	}
	var traffic []sent
	for m := 0; m <= 60; m += 10 {
		traffic = append(traffic, sent{min: m, user: "u-1"})
	}
	for m := 110; m <= 180; m += 10 {
		traffic = append(traffic, sent{min: m, user: "u-1"})
	}
	for m := 5; m <= 180; m += 25 {
		traffic = append(traffic, sent{min: m})
	}
	traffic = append(traffic, sent{min: 35, user: "u-1", session: "explicit-1"})
	// A late item, sent after the rest, inside u-1's first session.
	late := sent{min: 45, user: "u-1"}
	item := func(s sent) map[string]any {
		it := map[string]any{"timestamp": at(s.min).Format(time.RFC3339Nano), "method": "tools/call", "name": "search",
			"duration_ms": 10, "client_name": "claude-desktop", "client_version": "1.0"}
		if s.user == "" {
			it["client_name"], it["client_version"] = "cursor", "2.0"
		} else {
			it["user_id"] = s.user
		}
		if s.session != "" {
			it["session_id"] = s.session
		}
		return it
	}
	items := func() [3][]map[string]any {
		var out [3][]map[string]any
		for _, s := range traffic {
			it := item(s)
			// Two payloads, as a sender flushes them: the first ninety
			// minutes, then the rest; out of order within each.
			p := 0
			if s.min > 90 {
				p = 1
			}
			out[p] = append(out[p], it)
		}
		for _, p := range out {
			rand.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		}
		out[2] = []map[string]any{item(late)}
		return out
	}

	token, mcp, key := a.newTenant("stateless")
	for _, p := range items() {
		if r := a.must(202, "POST", "/v1/ingest", key, map[string]any{"items": p}); r["accepted"] != float64(len(p)) {
			t.Fatalf("ingest: %v", r)
		}
	}
	u1a := analytics.AutoSessionID(mcp, "u:u-1", at(0))
	u1b := analytics.AutoSessionID(mcp, "u:u-1", at(110))
	cur := analytics.AutoSessionID(mcp, `c:"cursor" "2.0"`, at(5))
	type want struct {
		first, last time.Time
		calls       int
	}
	wants := map[string]want{u1a: {at(0), at(60), 8}, u1b: {at(110), at(180), 8}, cur: {at(5), at(180), 8}, "explicit-1": {at(35), at(35), 1}}
	now := time.Now().UTC()
	rng := "from=" + now.AddDate(0, 0, -1).Format(time.DateOnly) + "&to=" + now.Format(time.DateOnly)
	eventually(t, 10*time.Second, func() error {
		ov := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview?"+rng, token, nil)
		if num(ov["calls"]) != float64(len(traffic)+1) || num(ov["sessions"]) != 4 {
			return fmt.Errorf("overview: %v calls, %v sessions; want %d, 4", ov["calls"], ov["sessions"], len(traffic)+1)
		}
		ss := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions?limit=10&"+rng, token, nil)["items"].([]any)
		var got []string
		for _, s := range ss {
			m := s.(map[string]any)
			w, ok := wants[m["session_id"].(string)]
			if !ok || m["started_at"] != w.first.Format(time.RFC3339) && !strings.HasPrefix(m["started_at"].(string), w.first.Format("2006-01-02T15:04:05")) ||
				!strings.HasPrefix(m["last_seen_at"].(string), w.last.Format("2006-01-02T15:04:05")) || num(m["calls"]) != float64(w.calls) {
				return fmt.Errorf("session %v: want %+v", m, w)
			}
			got = append(got, m["session_id"].(string))
		}
		if len(got) != len(wants) {
			return fmt.Errorf("sessions %v, want %d", got, len(wants))
		}
		return nil
	})
	tl := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions/"+url.PathEscape(u1b)+"?"+rng, token, nil)
	if num(tl["calls"]) != 8 || tl["user_id"] != "u-1" || len(tl["items"].([]any)) != 8 {
		t.Errorf("timeline of u-1's second session: %v", tl)
	}
	bd := a.must(200, "GET", "/v1/mcps/"+mcp+"/breakdown?by=user_id&"+rng, token, nil)
	var by []string
	for _, it := range bd["items"].([]any) {
		m := it.(map[string]any)
		by = append(by, fmt.Sprintf("%s:%v", m["value"], m["sessions"]))
	}
	sort.Strings(by)
	if strings.Join(by, " ") != ":1 u-1:3" {
		t.Errorf("sessions by user: %v", by)
	}
	// Deleting u-1's data deletes u-1's session state at once; the
	// cursor client's stays.
	stateRows := func() int {
		var n int
		if err := app.PG.Pool.QueryRow(t.Context(), `SELECT count(*) FROM auto_sessions WHERE mcp_id = $1`, mcp).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := stateRows(); n != 2 {
		t.Fatalf("%d identities' state, want 2", n)
	}
	a.must(202, "DELETE", "/v1/mcps/"+mcp+"/users/u-1", token, nil)
	if n := stateRows(); n != 1 {
		t.Errorf("%d identities' state after deleting u-1's data, want 1", n)
	}

	// A longer idle timeout, set on the MCP: the pause no longer splits.
	token2, mcp2, key2 := a.newTenant("stateless-60")
	if m := a.must(200, "PATCH", "/v1/mcps/"+mcp2, token2, map[string]any{"session_idle_minutes": 60}); m["session_idle_minutes"] != 60.0 {
		t.Fatalf("patch: %v", m)
	}
	a.must(422, "PATCH", "/v1/mcps/"+mcp2, token2, map[string]any{"session_idle_minutes": 0})
	for _, p := range items() {
		a.must(202, "POST", "/v1/ingest", key2, map[string]any{"items": p})
	}
	eventually(t, 10*time.Second, func() error {
		ss := a.must(200, "GET", "/v1/mcps/"+mcp2+"/sessions?limit=10&"+rng, token2, nil)["items"].([]any)
		ids := map[string]bool{}
		for _, s := range ss {
			ids[s.(map[string]any)["session_id"].(string)] = true
		}
		u1 := analytics.AutoSessionID(mcp2, "u:u-1", at(0))
		if len(ids) != 3 || !ids[u1] || !ids["explicit-1"] || !ids[analytics.AutoSessionID(mcp2, `c:"cursor" "2.0"`, at(5))] {
			return fmt.Errorf("sessions with a 60-minute timeout: %v", ids)
		}
		return nil
	})
}

// TestStatelessSessionsPostgresOutage: items sent without a session_id
// before, during and after a PostgreSQL kill are all answered 202 for the
// cached key and stored once, and get the sessions of docs/sessions.md as
// if PostgreSQL had never gone: u-1's calls, 5 to 20 minutes apart, are
// one session although the call after the outage is 40 minutes after the
// last one PostgreSQL saw before it (the instance's mirror was merged
// back); u-2, seen only during the outage, is one session of its own.
func TestStatelessSessionsPostgresOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	own := testenv.OwnPostgres(t)
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Postgres.URL = own.URL
	svc := startBinary(t, buildBinary(t), cfg, testenv.FreePort(t))
	a := api{t, svc.base}
	token, mcp, key := a.newTenant("stateless-outage")
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	n := 0
	send := func(phase, user string, mins ...int) {
		t.Helper()
		var items []map[string]any
		for _, m := range mins {
			n++
			items = append(items, map[string]any{"id": fmt.Sprintf("so-%d", n), "timestamp": t0.Add(time.Duration(m) * time.Minute).Format(time.RFC3339Nano),
				"method": "tools/call", "name": "search", "duration_ms": 10, "user_id": user})
		}
		begun := time.Now()
		status, res := postIngest(t, svc.base, key, items, false)
		if status != 202 || num(res["accepted"]) != float64(len(items)) {
			t.Fatalf("%s: ingest of %s %v: %d %v", phase, user, mins, status, res)
		}
		t.Logf("%s: %s %v answered 202 in %s", phase, user, mins, time.Since(begun).Round(time.Millisecond))
	}
	send("before", "u-1", 0)
	send("before", "u-1", 5)
	own.Kill(t)
	send("during", "u-1", 15)
	send("during", "u-2", 20)
	send("during", "u-1", 25)
	if status, _ := a.do("GET", "/v1/account", token, nil); status != 503 {
		t.Fatalf("account during the outage: %d; PostgreSQL is not down", status)
	}
	own.Start(t)
	eventually(t, 30*time.Second, func() error {
		if status, _ := a.do("GET", "/v1/account", token, nil); status != 200 {
			return fmt.Errorf("account after the outage: %d", status)
		}
		return nil
	})
	send("after", "u-1", 45)
	send("after", "u-1", 50)

	settledWithin(t, svc.base+"/metrics", time.Minute)
	for id, c := range storedPerID(t, cfg, mcp, "so-") {
		if c != 1 {
			t.Errorf("item %s stored %d times", id, c)
		}
	}
	wants := map[string]int{analytics.AutoSessionID(mcp, "u:u-1", t0): 6, analytics.AutoSessionID(mcp, "u:u-2", t0.Add(20*time.Minute)): 1}
	now := time.Now().UTC()
	rng := "from=" + now.AddDate(0, 0, -1).Format(time.DateOnly) + "&to=" + now.Format(time.DateOnly)
	eventually(t, 10*time.Second, func() error {
		ss := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions?limit=10&"+rng, token, nil)["items"].([]any)
		got := map[string]int{}
		for _, s := range ss {
			m := s.(map[string]any)
			got[m["session_id"].(string)] = int(num(m["calls"]))
		}
		if fmt.Sprint(got) != fmt.Sprint(wants) {
			return fmt.Errorf("sessions (id: calls) %v, want %v", got, wants)
		}
		return nil
	})
}
