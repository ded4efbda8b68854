package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/mcpgo"
)

// TestAgentFailuresReadBack (issue 39) drives a go-sdk server instrumented
// by mcpgo from the go-sdk client through the agent-failure script (a
// misspelled tool, two refused calls, a handler error, an isError result, a
// 100 KB answer, the same call six times in a row) and reads it back from
// the service through the fields the issue pins: unknown-tools with the
// closest name and client, tool detail error_kinds and response_bytes_*,
// overview unknown_tool_calls and repeated_calls, and the timeline's
// repeat. The reads are the service side of issue 39 (branch h39api); on a
// service without the unknown-tools route (404) it skips, saying so.
func TestAgentFailuresReadBack(t *testing.T) {
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("agentfail")
	if code, _ := a.do("GET", "/v1/mcps/"+mcpID+"/unknown-tools", token, nil); code == 404 {
		t.Skip("the service has no GET /v1/mcps/{id}/unknown-tools yet: issue 39's reads (branch h39api) are not merged")
	}
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "3.0.0"}, nil)
	schema := &jsonschema.Schema{Type: "object", Required: []string{"city", "days"}, Properties: map[string]*jsonschema.Schema{
		"city": {Type: "string"}, "days": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(7.0)},
	}}
	type forecastIn struct {
		City string `json:"city"`
		Days int    `json:"days"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "get_forecast", InputSchema: schema}, func(_ context.Context, _ *mcp.CallToolRequest, in forecastIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sun in " + in.City}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "explode"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("weather backend exploded")
	})
	mcp.AddTool(server, &mcp.Tool{Name: "refuse"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no data for that region"}}}, nil, nil
	})
	bigText := strings.Repeat("x", 100*1024)
	mcp.AddTool(server, &mcp.Tool{Name: "big_report"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bigText}}}, nil, nil
	})
	tel, err := mcpgo.Instrument(server, mcpgo.Options{Client: client.Options{Endpoint: base, Key: key, FlushInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	var bigBytes int64
	call := func(name string, args any) {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err == nil && name == "big_report" {
			b, _ := json.Marshal(r)
			bigBytes = int64(len(b))
		}
	}
	if _, err := cs.ListTools(ctx, nil); err != nil { // the inventory the closest name is taken from
		t.Fatal(err)
	}
	loop := map[string]any{"city": "Paris", "days": 3}
	call("get_forcast", loop)
	call("get_forecast", map[string]any{"city": "Atlantis", "days": "seven"})
	call("get_forecast", map[string]any{"city": "Atlantis", "days": 99})
	call("explode", map[string]any{})
	call("refuse", map[string]any{})
	call("big_report", map[string]any{})
	for range 6 {
		call("get_forecast", loop)
	}
	_ = cs.Close()
	ss.Wait()
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const repeats = 5 // the 2nd to 6th of the six same calls

	eventually(t, 30*time.Second, func() error {
		o := a.must(200, "GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
		if num(o["calls"]) != 14 || num(o["unknown_tool_calls"]) != 1 || num(o["repeated_calls"]) != repeats {
			return fmt.Errorf("overview calls %v unknown_tool_calls %v repeated_calls %v; want 14, 1, %d", o["calls"], o["unknown_tool_calls"], o["repeated_calls"], repeats)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		u := a.must(200, "GET", "/v1/mcps/"+mcpID+"/unknown-tools", token, nil)["items"].([]any)
		if len(u) != 1 {
			return fmt.Errorf("unknown tools %v", u)
		}
		m := u[0].(map[string]any)
		clients, _ := m["clients"].([]any)
		if m["name"] != "get_forcast" || num(m["calls"]) != 1 || num(m["sessions"]) != 1 || m["closest"] != "get_forecast" ||
			len(clients) != 1 || clients[0].(map[string]any)["client_name"] != "agent" || num(clients[0].(map[string]any)["calls"]) != 1 {
			return fmt.Errorf("unknown tool %v", m)
		}
		return nil
	})
	kinds := func(tool string) string {
		d := a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools/"+url.PathEscape(tool), token, nil)
		var out []string
		for _, k := range d["error_kinds"].([]any) {
			m := k.(map[string]any)
			out = append(out, fmt.Sprintf("%v=%v", m["error_kind"], num(m["count"])))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	eventually(t, 30*time.Second, func() error {
		for tool, want := range map[string]string{"get_forecast": "invalid_params=2", "explode": "exception=1", "refuse": "tool_error=1", "big_report": ""} {
			if got := kinds(tool); got != want {
				return fmt.Errorf("%s error_kinds %s, want %s", tool, got, want)
			}
		}
		d := a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools/big_report", token, nil)
		if num(d["response_bytes_max"]) != float64(bigBytes) || num(d["response_bytes_p50"]) != float64(bigBytes) {
			return fmt.Errorf("big_report response_bytes max %v p50 %v, want %d", d["response_bytes_max"], d["response_bytes_p50"], bigBytes)
		}
		return nil
	})
	sessions := a.must(200, "GET", "/v1/mcps/"+mcpID+"/sessions", token, nil)["items"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("sessions %v", sessions)
	}
	sid := sessions[0].(map[string]any)["session_id"].(string)
	tl := a.must(200, "GET", "/v1/mcps/"+mcpID+"/sessions/"+url.PathEscape(sid), token, nil)["items"].([]any)
	var rep []string
	for _, it := range tl {
		m := it.(map[string]any)
		if m["method"] == "tools/call" {
			rep = append(rep, fmt.Sprint(num(m["repeat"])))
		}
	}
	if got := strings.Join(rep, " "); got != "0 0 0 0 0 0 0 1 2 3 4 5" {
		t.Errorf("timeline repeats %s", got)
	}
}
