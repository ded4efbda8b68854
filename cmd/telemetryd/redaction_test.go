package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// exportedItems reads today's export of an MCP as NDJSON, by id.
func exportedItems(t *testing.T, base, mcp, token string) map[string]map[string]any {
	t.Helper()
	res, body := getRaw(t, base, "/v1/mcps/"+mcp+"/export", token)
	if res.StatusCode != 200 {
		t.Fatalf("export: %d %s", res.StatusCode, body)
	}
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		id, _ := m["id"].(string)
		out[id] = m
		out["session:"+m["session_id"].(string)] = m
	}
	return out
}

// TestRedactionEndToEnd switches redaction on for one MCP (a bad pattern
// first: 422), ingests secrets through /v1/ingest and OTLP, and reads what
// was stored through the export: every built-in pattern and the custom one
// replaced in error_message and attribute values, identifiers untouched;
// the MCP without redaction keeps the strings exactly as sent.
func TestRedactionEndToEnd(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Export.PerMinute = 1000 // the test polls through the export
	_, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, key := a.newTenant("red")
	// Same account, second MCP, redaction left off.
	plain := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": "plain"})["id"].(string)
	plainKey := a.must(201, "POST", "/v1/mcps/"+plain+"/keys", token, map[string]any{"name": "k"})["key"].(string)

	got := a.must(200, "GET", "/v1/mcps/"+mcp, token, nil)["redaction"].(map[string]any)
	if got["enabled"] != false || len(got["patterns"].([]any)) != 0 {
		t.Fatalf("default redaction: %v", got)
	}
	for _, bad := range []string{"(unclosed", "a*", "(x{1000}){1000}"} {
		status, res := a.do("PATCH", "/v1/mcps/"+mcp, token, map[string]any{"redaction": map[string]any{"enabled": true, "patterns": []string{`ok\d`, bad}}})
		errs, _ := res["errors"].([]any)
		if status != 422 || res["code"] != "invalid" || len(errs) != 1 || errs[0].(map[string]any)["location"] != "body.redaction.patterns[1]" {
			t.Errorf("pattern %q: %d %v", bad, status, res)
		}
	}
	if r := a.must(200, "GET", "/v1/mcps/"+mcp, token, nil)["redaction"].(map[string]any); r["enabled"] != false {
		t.Fatalf("a refused change must not apply: %v", r)
	}
	res := a.must(200, "PATCH", "/v1/mcps/"+mcp, token, map[string]any{"redaction": map[string]any{"enabled": true, "patterns": []string{`\bcustomer-[0-9]{6}\b`}}})
	if r := res["redaction"].(map[string]any); r["enabled"] != true || r["patterns"].([]any)[0] != `\bcustomer-[0-9]{6}\b` {
		t.Fatalf("patched: %v", res)
	}
	// The key cache trusts its answers for key_cache_ttl.
	time.Sleep(cfg.Auth.KeyCacheTTL + 200*time.Millisecond)

	secrets := map[string]string{
		"email":  "user ada@example.com not found",
		"bearer": "sent Authorization: Bearer abcDEF123.xyz",
		"apikey": "bad key sk_live_4eC39HqLyjWDarjtT1zdp7dc",
		"card":   "charge 4242 4242 4242 4242 declined",
		"custom": "no such customer-123456",
	}
	want := map[string]string{
		"email":  "user [redacted] not found",
		"bearer": "sent Authorization: [redacted]",
		"apikey": "bad key [redacted]",
		"card":   "charge [redacted] declined",
		"custom": "no such [redacted]",
	}
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	var items []map[string]any
	for id, s := range secrets {
		items = append(items, map[string]any{"id": id, "timestamp": now, "session_id": "s-" + id, "method": "tools/call",
			"name": "lookup", "error_type": "E", "error_message": s, "user_id": "ada@example.com",
			"attributes": map[string]string{"note": s, "region": "eu"}})
	}
	for _, k := range []string{key, plainKey} {
		if status, res := postIngest(t, base, k, items, false); status != 202 || num(res["accepted"]) != float64(len(items)) {
			t.Fatalf("ingest: %d %v", status, res)
		}
	}
	// OTLP: the span status message becomes error_message.
	otlpBody := fmt.Sprintf(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0707070707070707070707070707070a","spanId":"0102030405060708",
	  "name":"tools/call lookup","kind":2,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","status":{"code":2,"message":"mail ada@example.com"},
	  "attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/call"}},{"key":"mcp.session.id","value":{"stringValue":"otlp-sess"}}]}]}]}]}`,
		time.Now().Add(-time.Minute).UnixNano(), time.Now().Add(-time.Minute).Add(10*time.Millisecond).UnixNano())
	for _, k := range []string{key, plainKey} {
		req, _ := http.NewRequest("POST", base+"/v1/otlp/v1/traces", bytes.NewReader([]byte(otlpBody)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+k)
		r, err := http.DefaultClient.Do(req)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("otlp: %v %v", err, r)
		}
		r.Body.Close()
	}

	var red, raw map[string]map[string]any
	eventually(t, 10*time.Second, func() error {
		red, raw = exportedItems(t, base, mcp, token), exportedItems(t, base, plain, token)
		if len(red) != 2*(len(items)+1) || len(raw) != 2*(len(items)+1) {
			return fmt.Errorf("stored %d and %d items, want %d", len(red)/2, len(raw)/2, len(items)+1)
		}
		return nil
	})
	for id, s := range secrets {
		r, p := red[id], raw[id]
		attrs := r["attributes"].(map[string]any)
		if r["error_message"] != want[id] || attrs["note"] != want[id] || attrs["region"] != "eu" || r["user_id"] != "ada@example.com" {
			t.Errorf("%s redacted: %v", id, r)
		}
		if p["error_message"] != s || p["attributes"].(map[string]any)["note"] != s {
			t.Errorf("%s without redaction must stay as sent: %v", id, p)
		}
	}
	if m := red["session:otlp-sess"]["error_message"]; m != "mail [redacted]" {
		t.Errorf("otlp redacted: %v", red["session:otlp-sess"])
	}
	if m := raw["session:otlp-sess"]["error_message"]; m != "mail ada@example.com" {
		t.Errorf("otlp without redaction: %v", raw["session:otlp-sess"])
	}
}

// TestRedactionBoundedAndCut: a pattern validation accepts but whose
// searches read to the end of the string (a[^Z]*Z|a, quadratic under
// ReplaceAll: seconds per 16 KiB before) over a 1 MiB payload of a's is
// refused within its budget (422 redaction_budget_exceeded, nothing
// stored) while another tenant's ingest goes on; an ordinary 1 MiB payload
// of the same MCP passes; attribute values are cut to 1024 characters,
// after redaction, so a secret straddling the cut leaves nothing of
// itself.
func TestRedactionBoundedAndCut(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Export.PerMinute = 1000
	_, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, key := a.newTenant("quad")
	_, _, otherKey := a.newTenant("bystander")
	status, res := a.do("PATCH", "/v1/mcps/"+mcp, token, map[string]any{"redaction": map[string]any{"enabled": true, "patterns": []string{`a[^Z]{0,200}Z`}}})
	if status != 422 || !strings.Contains(fmt.Sprint(res["detail"]), "too complex") {
		t.Fatalf("a pattern of 400 instructions: %d %v", status, res)
	}
	a.must(200, "PATCH", "/v1/mcps/"+mcp, token, map[string]any{"redaction": map[string]any{"enabled": true, "patterns": []string{`a[^Z]*Z|a`}}})
	time.Sleep(cfg.Auth.KeyCacheTTL + 200*time.Millisecond)

	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	item := func(id, msg string, attrs map[string]string) map[string]any {
		return map[string]any{"id": id, "timestamp": now, "session_id": "s-" + id, "method": "tools/call", "name": "t",
			"error_message": msg, "attributes": attrs}
	}
	var hostile []map[string]any
	for i := 0; i < 250; i++ {
		hostile = append(hostile, item(fmt.Sprint("h", i), strings.Repeat("a", 4000), nil))
	}
	done := make(chan int)
	go func() {
		status, _ := postIngest(t, base, otherKey, []map[string]any{item("b1", "fine", nil)}, false)
		done <- status
	}()
	start := time.Now()
	status, res = postIngest(t, base, key, hostile, false)
	took := time.Since(start)
	if status != 422 || res["code"] != "redaction_budget_exceeded" {
		t.Fatalf("a 1 MiB payload under a quadratic pattern: %d %v", status, res)
	}
	if took > 2*time.Second {
		t.Errorf("refusing it took %v", took)
	}
	t.Logf("1 MiB under a[^Z]*Z|a: refused in %v", took)
	if s := <-done; s != 202 {
		t.Errorf("the other tenant's ingest meanwhile: %d", s)
	}

	// An ordinary 1 MiB payload of the same MCP passes its budget.
	var plain []map[string]any
	text := strings.Repeat("upstream timed out calling https://api.example.com/v1/search for Zed ", 50)
	for i := 0; i < 250; i++ {
		plain = append(plain, item(fmt.Sprint("p", i), text, map[string]string{"q": text[:200]}))
	}
	if status, res := postIngest(t, base, key, plain, false); status != 202 || num(res["accepted"]) != 250 {
		t.Fatalf("an ordinary 1 MiB payload: %d %v", status, res)
	}

	// Cut after redaction: an attribute of 512 KiB (256 Ki characters) keeps 1024 characters;
	// a key straddling character 1024 leaves none of itself.
	x := strings.Repeat("x", 1019) + " "
	secret := "sk_live_4eC39HqLyjWDbrjtT1zdp7dc" // no a: the custom pattern takes every a
	if status, res := postIngest(t, base, key, []map[string]any{item("cut", "Zero "+secret, map[string]string{
		"big": strings.Repeat("é", 256<<10) /* 512 KiB */, "straddle": x + secret})}, false); status != 202 || num(res["accepted"]) != 1 {
		t.Fatalf("long attributes: %d %v", status, res)
	}
	eventually(t, 10*time.Second, func() error {
		got := exportedItems(t, base, mcp, token)["cut"]
		if got == nil {
			return fmt.Errorf("not stored yet")
		}
		attrs := got["attributes"].(map[string]any)
		if attrs["big"] != strings.Repeat("é", 1024) || attrs["straddle"] != x+"[red" || got["error_message"] != "Zero [redacted]" {
			t.Fatalf("stored: big %d chars, straddle %q, message %q", len([]rune(attrs["big"].(string))), attrs["straddle"].(string)[1000:], got["error_message"])
		}
		return nil
	})
}
