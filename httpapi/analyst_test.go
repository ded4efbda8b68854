package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
)

// TestAnalystReadsThroughTheAPI ingests a small history through
// /v1/ingest and reads it back through the analyst reads: a session's
// timeline page by page, breakdowns (with other, filters and a hostile
// attribute key), hourly series across midnight, and the previous period
// on the overview, tools, a tool and a breakdown. The figures are small
// enough to be exact, so they are written out by hand.
func TestAnalystReadsThroughTheAPI(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	token := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("ana"), "Ana"), 201, "")["token"].(string)
	mcp := expect(t, s, "POST", "/v1/mcps", token, `{"name":"docs"}`, 201, "")["id"].(string)
	key := expect(t, s, "POST", "/v1/mcps/"+mcp+"/keys", token, `{"name":"k"}`, 201, "")["key"].(string)

	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday, old := today.AddDate(0, 0, -1), today.AddDate(0, 0, -8)
	at := func(d time.Time, hms string) string {
		c, _ := time.Parse("15:04:05.000", hms)
		return d.Add(time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute +
			time.Duration(c.Second())*time.Second + time.Duration(c.Nanosecond())).Format(time.RFC3339Nano)
	}
	hostileKey := `k"'?&=`
	session := "s/1 é"
	items := []map[string]any{
		{"id": "i-1", "timestamp": at(yesterday, "10:00:00.000"), "session_id": session, "method": "initialize", "duration_ms": 3,
			"client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1", "protocol_version": "2025-06-18"},
		{"timestamp": at(yesterday, "10:00:01.500"), "session_id": session, "method": "tools/call", "name": "search_docs",
			"duration_ms": 100, "client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1",
			"attributes": map[string]string{"plan": "pro", hostileKey: "v1"}},
		{"timestamp": at(yesterday, "10:00:01.500"), "session_id": session, "method": "tools/call", "name": "search_docs",
			"duration_ms": 200, "error_type": "TimeoutError", "error_message": "upstream timed out",
			"client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1"},
		{"timestamp": at(yesterday, "11:30:00.000"), "session_id": session, "method": "tools/call", "name": "fetch",
			"duration_ms": 50, "client_name": "claude-desktop", "client_version": "0.9.1", "user_id": "u-1"},
		{"timestamp": at(yesterday, "23:59:59.999"), "session_id": "s-2", "method": "tools/call", "name": "fetch",
			"duration_ms": 10, "client_name": "cursor", "client_version": "1.2.0", "user_id": "u-2", "protocol_version": "2026-07-28"},
		{"timestamp": at(today, "00:00:00.000"), "session_id": "s-2", "method": "tools/call", "name": "fetch",
			"duration_ms": 20, "client_name": "cursor", "client_version": "1.2.0", "user_id": "u-2", "protocol_version": "2026-07-28"},
		{"timestamp": at(old, "09:00:00.000"), "session_id": "s-old", "method": "tools/call", "name": "search_docs",
			"duration_ms": 400, "client_name": "claude-desktop", "client_version": "0.9.0"},
		{"timestamp": at(old, "09:05:00.000"), "session_id": "s-old", "method": "tools/call", "name": "search_docs",
			"duration_ms": 400, "client_name": "claude-desktop", "client_version": "0.9.0"},
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	if r := expect(t, s, "POST", "/v1/ingest", key, string(body), 202, ""); r["accepted"] != float64(len(items)) {
		t.Fatalf("ingest: %v", r)
	}
	base := "/v1/mcps/" + mcp
	week := fmt.Sprintf("from=%s&to=%s", today.AddDate(0, 0, -6).Format("2006-01-02"), today.Format("2006-01-02"))
	deadline := time.Now().Add(15 * time.Second)
	for {
		// Rollups become readable one after the other (each view's insert
		// commits on its own): wait for the overview and the session's
		// timeline (session_span) alike.
		o := expect(t, s, "GET", base+"/overview?from="+old.Format("2006-01-02"), token, "", 200, "")
		tl, _, _ := call(t, s, "GET", base+"/sessions/"+url.PathEscape(session), token, "")
		bd := expect(t, s, "GET", base+"/breakdown?by=method&from="+old.Format("2006-01-02"), token, "", 200, "")
		var bdCalls float64
		for _, it := range bd["items"].([]any) {
			bdCalls += it.(map[string]any)["calls"].(float64)
		}
		hr := expect(t, s, "GET", base+"/overview?granularity=hour&from="+yesterday.Format("2006-01-02"), token, "", 200, "")
		var hrCalls float64
		for _, e := range hr["series"].([]any) {
			hrCalls += e.(map[string]any)["calls"].(float64)
		}
		if o["calls"] == float64(len(items)) && tl == 200 && bdCalls == float64(len(items)) && hrCalls == float64(len(items)-2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("items not readable: %v", o["calls"])
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("timeline", func(t *testing.T) {
		path := base + "/sessions/" + url.PathEscape(session)
		var got []any
		cursor := ""
		var first map[string]any
		for page := 0; ; page++ {
			p := expect(t, s, "GET", path+"?limit=2&cursor="+url.QueryEscape(cursor), token, "", 200, "")
			if page == 0 {
				first = p
			}
			got = append(got, p["items"].([]any)...)
			if p["next_cursor"] == nil {
				break
			}
			cursor = p["next_cursor"].(string)
			if page > 3 {
				t.Fatal("too many pages")
			}
		}
		if keysOf(first) != "calls,client_name,client_version,errors,items,last_seen_at,next_cursor,session_id,started_at,user_id" ||
			first["session_id"] != session || first["calls"] != 4.0 || first["errors"] != 1.0 || first["client_name"] != "claude-desktop" ||
			first["client_version"] != "0.9.1" || first["user_id"] != "u-1" || first["started_at"] != at(yesterday, "10:00:00.000") ||
			first["last_seen_at"] != at(yesterday, "11:30:00.000") {
			t.Errorf("timeline figures %v", first)
		}
		if len(got) != 4 {
			t.Fatalf("%d items: %v", len(got), got)
		}
		i0 := got[0].(map[string]any)
		if keysOf(i0) != "attributes,duration_ms,error_kind,error_message,error_type,id,method,name,repeat,response_bytes,status,timestamp" ||
			i0["id"] != "i-1" || i0["method"] != "initialize" || i0["name"] != nil || i0["error_type"] != nil || i0["duration_ms"] != 3.0 ||
			fmt.Sprint(i0["attributes"]) != "map[]" {
			t.Errorf("first item %v", i0)
		}
		i1, i2 := got[1].(map[string]any), got[2].(map[string]any)
		if i1["status"] == i2["status"] || i1["timestamp"] != at(yesterday, "10:00:01.500") || i2["timestamp"] != i1["timestamp"] {
			t.Errorf("the two items of one millisecond: %v %v", i1, i2)
		}
		for _, it := range []map[string]any{i1, i2} {
			if it["status"] == "error" && (it["error_type"] != "TimeoutError" || it["error_message"] != "upstream timed out" || it["duration_ms"] != 200.0) {
				t.Errorf("error item %v", it)
			}
			if it["status"] == "ok" && (it["attributes"].(map[string]any)[hostileKey] != "v1" || it["id"] != nil) {
				t.Errorf("ok item %v", it)
			}
		}
		if got[3].(map[string]any)["name"] != "fetch" {
			t.Errorf("last item %v", got[3])
		}
		// from/to narrow it; s-2 crosses midnight.
		p := expect(t, s, "GET", base+"/sessions/s-2?from="+today.Format("2006-01-02"), token, "", 200, "")
		if p["calls"] != 1.0 || len(p["items"].([]any)) != 1 || p["started_at"] != at(today, "00:00:00.000") {
			t.Errorf("s-2 from today: %v", p)
		}
		p = expect(t, s, "GET", base+"/sessions/s-2?to="+yesterday.Format("2006-01-02"), token, "", 200, "")
		if p["calls"] != 1.0 || p["last_seen_at"] != at(yesterday, "23:59:59.999") {
			t.Errorf("s-2 to yesterday: %v", p)
		}
		expect(t, s, "GET", path+"?from="+today.Format("2006-01-02"), token, "", 404, "not_found")
		expect(t, s, "GET", base+"/sessions/nope", token, "", 404, "not_found")
		expect(t, s, "GET", path+"?cursor=garbage", token, "", 400, "bad_request")
		expect(t, s, "GET", path+"?limit=1001", token, "", 422, "")
		expect(t, s, "GET", path+"?from=2026-1-1", token, "", 400, "invalid_date")
		expect(t, s, "GET", path+"?from=2026-02-02&to=2026-02-01", token, "", 422, "invalid_range")
	})

	t.Run("breakdown", func(t *testing.T) {
		b := expect(t, s, "GET", base+"/breakdown?by=client_name&"+week, token, "", 200, "")
		if keysOf(b) != "by,from,items,other,to" || b["by"] != "client_name" || b["other"] != nil || len(b["items"].([]any)) != 2 {
			t.Fatalf("breakdown %v", b)
		}
		c := b["items"].([]any)[0].(map[string]any)
		if keysOf(c) != "avg_ms,calls,error_rate,errors,p50_ms,p95_ms,sessions,users,value" || c["value"] != "claude-desktop" ||
			c["calls"] != 4.0 || c["errors"] != 1.0 || c["error_rate"] != 0.25 || c["avg_ms"] != 88.25 || c["sessions"] != 1.0 || c["users"] != 1.0 {
			t.Errorf("claude-desktop %v", c)
		}
		b = expect(t, s, "GET", base+"/breakdown?by=client_name&limit=1&compare=previous&"+week, token, "", 200, "")
		other, _ := b["other"].(map[string]any)
		if other["calls"] != 2.0 || other["avg_ms"] != 15.0 || other["users"] != 1.0 {
			t.Errorf("other %v", b["other"])
		}
		prev := b["items"].([]any)[0].(map[string]any)["previous"].(map[string]any)
		if prev["calls"] != 2.0 || prev["avg_ms"] != 400.0 || fmt.Sprint(b["previous"]) != fmt.Sprintf("map[from:%s to:%s]",
			today.AddDate(0, 0, -13).Format("2006-01-02"), today.AddDate(0, 0, -7).Format("2006-01-02")) {
			t.Errorf("previous %v / %v", prev, b["previous"])
		}
		b = expect(t, s, "GET", base+"/breakdown?by="+url.QueryEscape("attribute:"+hostileKey)+"&"+week, token, "", 200, "")
		if items := b["items"].([]any); len(items) != 2 || items[0].(map[string]any)["value"] != "" || items[0].(map[string]any)["calls"] != 5.0 ||
			items[1].(map[string]any)["value"] != "v1" || items[1].(map[string]any)["calls"] != 1.0 {
			t.Errorf("attribute breakdown %v", b)
		}
		b = expect(t, s, "GET", base+"/breakdown?by=protocol_version&"+week, token, "", 200, "")
		var pv []string
		for _, it := range b["items"].([]any) {
			m := it.(map[string]any)
			pv = append(pv, fmt.Sprintf("%s=%v/%v", m["value"], m["calls"], m["sessions"]))
		}
		if got := strings.Join(pv, " "); got != "=3/1 2026-07-28=2/1 2025-06-18=1/1" {
			t.Errorf("by protocol_version: %s", got)
		}
		b = expect(t, s, "GET", base+"/breakdown?by=tool&status=error&"+week, token, "", 200, "")
		if items := b["items"].([]any); len(items) != 1 || items[0].(map[string]any)["value"] != "search_docs" || items[0].(map[string]any)["errors"] != 1.0 {
			t.Errorf("errors by tool %v", b)
		}
		b = expect(t, s, "GET", base+"/breakdown?by=user_id&tool=fetch&"+week, token, "", 200, "")
		if items := b["items"].([]any); len(items) != 2 || items[0].(map[string]any)["value"] != "u-2" || items[0].(map[string]any)["calls"] != 2.0 {
			t.Errorf("fetch by user %v", b)
		}
		for _, bad := range []string{"by=", "by=nope", "by=attribute:", "by=tool&limit=201", "by=tool&status=maybe"} {
			rec, m := do(t, s, "GET", base+"/breakdown?"+bad, "", "Authorization", "Bearer "+token)
			if rec.Code != 422 || !strings.Contains(rec.Body.String(), `"location":"query.`) {
				t.Errorf("%s: %d %v", bad, rec.Code, m)
			}
		}
	})

	t.Run("hourly and previous", func(t *testing.T) {
		day := "from=" + yesterday.Format("2006-01-02") + "&to=" + today.Format("2006-01-02")
		o := expect(t, s, "GET", base+"/overview?granularity=hour&"+day, token, "", 200, "")
		series := o["series"].([]any)
		if len(series) != 48 || o["calls"] != 6.0 {
			t.Fatalf("hourly overview: %d entries, %v calls", len(series), o["calls"])
		}
		for i, e := range series {
			m := e.(map[string]any)
			want := map[int]float64{10: 3, 11: 1, 23: 1, 24: 1}[i]
			start := yesterday.Add(time.Duration(i) * time.Hour)
			if m["calls"] != want || m["start"] != start.Format(time.RFC3339) || m["date"] != start.Format("2006-01-02") {
				t.Errorf("hour %d: %v", i, m)
			}
		}
		o = expect(t, s, "GET", base+"/overview?compare=previous&"+week, token, "", 200, "")
		p := o["previous"].(map[string]any)
		if p["calls"] != 2.0 || p["from"] != today.AddDate(0, 0, -13).Format("2006-01-02") || p["p95_ms"] != 400.0 || p["users"] != 1.0 {
			t.Errorf("overview previous %v", p)
		}
		if d := o["series"].([]any)[0].(map[string]any); d["start"] != today.AddDate(0, 0, -6).Format(time.RFC3339) {
			t.Errorf("daily entry %v", d)
		}
		if o := expect(t, s, "GET", base+"/overview?"+week, token, "", 200, ""); o["previous"] != nil {
			t.Errorf("previous without compare: %v", o["previous"])
		}
		tl := expect(t, s, "GET", base+"/tools?compare=previous&"+week, token, "", 200, "")
		for _, it := range tl["items"].([]any) {
			m := it.(map[string]any)
			want := map[string]float64{"search_docs": 2, "fetch": 0}[m["name"].(string)]
			if m["previous"].(map[string]any)["calls"] != want {
				t.Errorf("tool previous %v", m)
			}
		}
		td := expect(t, s, "GET", base+"/tools/search_docs?granularity=hour&compare=previous&"+day, token, "", 200, "")
		if td["series"].([]any)[10].(map[string]any)["calls"] != 2.0 || len(td["series"].([]any)) != 48 ||
			td["previous"].(map[string]any)["calls"] != 0.0 {
			t.Errorf("tool hourly %v previous %v", td["series"].([]any)[10], td["previous"])
		}
		fortnight := "from=" + today.AddDate(0, 0, -14).Format("2006-01-02") + "&to=" + today.Format("2006-01-02")
		expect(t, s, "GET", base+"/overview?granularity=hour&"+fortnight, token, "", 422, "range_too_large")
		expect(t, s, "GET", base+"/tools/x?granularity=hour&"+fortnight, token, "", 422, "range_too_large")
		expect(t, s, "GET", base+"/overview?granularity=hour&from="+today.AddDate(0, 0, -13).Format("2006-01-02"), token, "", 200, "")
		expect(t, s, "GET", base+"/overview?granularity=week", token, "", 422, "")
		expect(t, s, "GET", base+"/overview?compare=next", token, "", 422, "")
	})
}
