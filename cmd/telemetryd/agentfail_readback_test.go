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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/client"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/internal/testkit/weather"
	"github.com/mcpscope/telemetry/mcpgo"
)

// TestAgentFailuresReadBack (issue 39) drives a go-sdk server instrumented
// by mcpgo from the go-sdk client through the agent-failure script
// (internal/testkit/weather: a misspelled tool, two refused calls, a
// handler error, an isError result, a 100 KB answer, the same call six
// times in a row, a missing prompt and resource) and reads it back from
// the service through the fields the issue pins: unknown-tools with the
// closest name and client, tool detail error_kinds and response_bytes_*,
// overview unknown_tool_calls and repeated_calls, and the timeline's
// repeat. The reads are the service side of issue 39 (branch h39api); on a
// service without the unknown-tools route (404) it skips, saying so.
func TestAgentFailuresReadBack(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcpID, key := a.newTenant("agentfail")
	if code, _ := a.do("GET", "/v1/mcps/"+mcpID+"/unknown-tools", token, nil); code == 404 {
		t.Skip("the service has no GET /v1/mcps/{id}/unknown-tools yet: issue 39's reads (branch h39api) are not merged")
	}
	ctx := context.Background()
	server := weather.NewServer()
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
	results, err := weather.Run(ctx, cs) // tools/list first: the inventory the closest name is taken from
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(results[5])
	bigBytes := len(b)
	_ = cs.Close()
	ss.Wait()
	if err := tel.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// initialize, tools/list, 13 tools/call, the prompt and resource misses
	const calls, repeats = 17, 5
	const unknown = 3 // get_forcast, the prompt sumary, the resource weather://station

	eventually(t, 30*time.Second, func() error {
		o := a.must(200, "GET", "/v1/mcps/"+mcpID+"/overview", token, nil)
		if num(o["calls"]) != calls || num(o["unknown_tool_calls"]) != unknown || num(o["repeated_calls"]) != repeats {
			return fmt.Errorf("overview calls %v unknown_tool_calls %v repeated_calls %v; want %d, %d, %d", o["calls"], o["unknown_tool_calls"], o["repeated_calls"], calls, unknown, repeats)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		var m map[string]any
		for _, it := range a.must(200, "GET", "/v1/mcps/"+mcpID+"/unknown-tools", token, nil)["items"].([]any) {
			if it.(map[string]any)["name"] == "get_forcast" {
				m = it.(map[string]any)
			}
		}
		if m == nil {
			return errors.New("get_forcast is not among the unknown tools")
		}
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
	if got := strings.Join(rep, " "); got != "0 0 0 0 0 0 0 1 2 3 4 5 0" {
		t.Errorf("timeline repeats %s", got)
	}
}
