package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func inventoryReport(version string, tools ...string) string {
	var list []map[string]any
	for i := 0; i+1 < len(tools); i += 2 {
		list = append(list, map[string]any{"name": tools[i], "schema_hash": hashOf(tools[i+1])})
	}
	b, _ := json.Marshal(map[string]any{"server_version": version, "protocol_version": "2025-06-18", "tools": list})
	return string(b)
}

// TestToolInventory reports two tool sets through the ingest endpoint and
// reads back the documented inventory and changes, merged with the calls
// of the range (a tool called but never listed included); a rule on
// tool_changes fires on the schema change; bounds refuse hostile reports.
func TestToolInventory(t *testing.T) {
	t.Parallel()
	s, _ := alertingServer(t)
	tm := newAPITeam(t, s)
	key := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/keys", tm.owner, `{"name":"k"}`, 201, "")["key"].(string)
	pat := expect(t, s, "POST", "/v1/account/tokens", tm.member, `{"name":"r","scope":"read"}`, 201, "")["token"].(string)
	base := "/v1/mcps/" + tm.mcp

	if r := expect(t, s, "POST", "/v1/ingest/inventory", key, inventoryReport("1.0.0", "a", "a-v1", "b", "b-v1"), 202, ""); r["tools"] != 2.0 {
		t.Fatalf("report 1: %v", r)
	}
	rule := expect(t, s, "POST", base+"/rules", tm.owner, `{"name":"schema of a","metric":"tool_changes","tool":"a","comparator":">=","threshold":2,"window_minutes":60,"channels":["in_app"]}`, 201, "")["id"].(string)
	if ev := expect(t, s, "POST", "/v1/rules/"+rule+"/evaluate", tm.owner, "", 200, ""); ev["value"] != 1.0 || ev["fired"] != false {
		t.Fatalf("after report 1: %v", ev)
	}
	time.Sleep(5 * time.Millisecond) // the second report's changes sort after the first's
	expect(t, s, "POST", "/v1/ingest/inventory", key, inventoryReport("1.1.0", "a", "a-v2", "c", "c-v1"), 202, "")
	expect(t, s, "POST", "/v1/ingest/inventory", key, inventoryReport("1.1.0", "a", "a-v2", "c", "c-v1"), 202, "") // the same again: no change
	if ev := expect(t, s, "POST", "/v1/rules/"+rule+"/evaluate", tm.owner, "", 200, ""); ev["value"] != 2.0 || ev["fired"] != true || ev["state"] != "firing" {
		t.Fatalf("after the schema change: %v", ev)
	}
	all := expect(t, s, "POST", base+"/rules", tm.owner, `{"name":"any","metric":"tool_changes","comparator":">","threshold":4,"window_minutes":60,"channels":["in_app"]}`, 201, "")["id"].(string)
	if ev := expect(t, s, "POST", "/v1/rules/"+all+"/evaluate", tm.owner, "", 200, ""); ev["value"] != 5.0 || ev["fired"] != true {
		t.Fatalf("all tools: %v", ev)
	}

	now := time.Now().UTC()
	var items []map[string]any
	for _, name := range []string{"a", "a", "zz"} {
		items = append(items, map[string]any{"timestamp": now.Format(time.RFC3339Nano), "session_id": "s", "method": "tools/call", "name": name})
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	expect(t, s, "POST", "/v1/ingest", key, string(body), 202, "")
	var inv map[string]any
	deadline := time.Now().Add(15 * time.Second)
	for {
		inv = expect(t, s, "GET", base+"/inventory", pat, "", 200, "")
		if strings.Contains(mustJSON(inv), `"zz"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls not merged: %v", inv)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tools := inv["tools"].([]any)
	got := ""
	for _, x := range tools {
		m := x.(map[string]any)
		got += fmt.Sprintf("%s:%v:%v:%v;", m["name"], m["calls"], m["schema_hash"] == nil, m["first_seen_at"] == nil)
		if m["name"] == "a" && m["schema_hash"] != hashOf("a-v2") {
			t.Errorf("a's hash: %v", m)
		}
	}
	if got != "a:2:false:false;b:0:false:false;c:0:false:false;zz:1:true:true;" {
		t.Fatalf("tools %s: %v", got, tools)
	}
	changes := ""
	for _, x := range inv["changes"].([]any) {
		m := x.(map[string]any)
		changes += fmt.Sprintf("%s %s %s;", m["kind"], m["tool"], m["server_version"])
	}
	if changes != "removed b 1.1.0;added c 1.1.0;changed a 1.1.0;added b 1.0.0;added a 1.0.0;" {
		t.Fatalf("changes %s", changes)
	}
	// A range before anything was reported: nothing listed, no change.
	old := now.AddDate(0, 0, -30).Format("2006-01-02")
	if r := expect(t, s, "GET", base+"/inventory?from="+old+"&to="+old, pat, "", 200, ""); len(r["tools"].([]any)) != 0 || len(r["changes"].([]any)) != 0 {
		t.Fatalf("old range: %v", r)
	}

	// Bounds and credentials.
	many := make([]string, 0, 2002)
	for i := 0; i < 1001; i++ {
		many = append(many, fmt.Sprintf("t%d", i), "x")
	}
	expect(t, s, "POST", "/v1/ingest/inventory", key, inventoryReport("1", many...), 413, "too_many_items")
	expect(t, s, "POST", "/v1/ingest/inventory", key, `{"tools":[{"name":"a","schema_hash":"ABC"}]}`, 422, "invalid")
	expect(t, s, "POST", "/v1/ingest/inventory", key, inventoryReport("1", "a", "x", "a", "y"), 422, "invalid")
	expect(t, s, "POST", "/v1/ingest/inventory", key, `{"tools":[{"name":"`+strings.Repeat("n", 257)+`","schema_hash":"`+hashOf("x")+`"}]}`, 422, "invalid")
	expect(t, s, "POST", "/v1/ingest/inventory", key, `{"tools":[{"name":"a","schema_hash":"`+hashOf("x")+`","schema":{"d":"`+strings.Repeat("x", 70000)+`"}}]}`, 413, "payload_too_large")
	expect(t, s, "POST", "/v1/ingest/inventory", key, `{"tools":`, 400, "bad_request")
	expect(t, s, "POST", "/v1/ingest/inventory", tm.owner, inventoryReport("1"), 403, "credential_not_allowed")
	expect(t, s, "GET", base+"/inventory", key, "", 403, "credential_not_allowed")
	expect(t, s, "GET", "/v1/mcps/"+tm.mcp+"/inventory", tm.otherOwner, "", 404, "not_found")
	// Nothing refused above changed the inventory.
	if r := expect(t, s, "GET", base+"/inventory", pat, "", 200, ""); len(r["changes"].([]any)) != 5 {
		t.Fatalf("refused reports changed the inventory: %v", r["changes"])
	}
}
