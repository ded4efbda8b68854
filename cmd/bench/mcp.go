package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// mcpRead is one tool of the service's MCP endpoint (/mcp) with the API
// read it answers like, timed side by side.
type mcpRead struct {
	name string
	tool string
	args map[string]any
	path string
}

// mcpReads times the MCP endpoint's tools over HTTP (one stateless
// JSON-RPC tools/call per request, as an MCP client sends it) beside the
// API reads they call, on the big MCP: the cost of the MCP layer is the
// difference.
func mcpReads(ctx context.Context, api *apiClient, mcp, tool string, today time.Time, reps int, out io.Writer) ([]figure, error) {
	week, year := today.AddDate(0, 0, -6).Format(analytics.DateLayout), today.AddDate(0, 0, -364).Format(analytics.DateLayout)
	to := today.Format(analytics.DateLayout)
	q := func(from string) string { return url.Values{"from": {from}, "to": {to}}.Encode() }
	reads := []mcpRead{
		{"mcp get_overview 7d", "get_overview", map[string]any{"mcp_id": mcp, "from": week, "to": to}, "/v1/mcps/" + mcp + "/overview?" + q(week)},
		{"mcp get_overview 365d", "get_overview", map[string]any{"mcp_id": mcp, "from": year, "to": to}, "/v1/mcps/" + mcp + "/overview?" + q(year)},
		{"mcp get_tools 365d", "get_tools", map[string]any{"mcp_id": mcp, "from": year, "to": to}, "/v1/mcps/" + mcp + "/tools?" + q(year)},
		{"mcp get_tool 365d", "get_tool", map[string]any{"mcp_id": mcp, "name": tool, "from": year, "to": to}, "/v1/mcps/" + mcp + "/tools/" + url.PathEscape(tool) + "?" + q(year)},
		{"mcp get_breakdown 365d", "get_breakdown", map[string]any{"mcp_id": mcp, "by": "client_name", "from": year, "to": to}, "/v1/mcps/" + mcp + "/breakdown?by=client_name&" + q(year)},
		{"mcp top_errors 7d", "top_errors", map[string]any{"mcp_id": mcp, "from": week, "to": to}, "/v1/mcps/" + mcp + "/insights?" + q(week)},
		{"mcp list_sessions 7d", "list_sessions", map[string]any{"mcp_id": mcp, "from": week, "to": to}, "/v1/mcps/" + mcp + "/sessions?" + q(week)},
	}
	fmt.Fprintf(out, "\nMCP endpoint tools beside the API read they call: p50/p95 over %d requests\n", reps)
	fmt.Fprintf(out, "%-26s %10s %10s %10s %10s\n", "tool", "MCP p50", "MCP p95", "API p50", "API p95")
	var figs []figure
	for _, r := range reads {
		mcpTimes, err := timeN(reps, func() error { return api.callTool(ctx, r.tool, r.args) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		apiTimes, err := timeN(reps, func() error {
			_, err := api.do(ctx, "GET", r.path, nil, nil, 200)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s (API): %w", r.name, err)
		}
		m50, m95 := percentile(mcpTimes, 50), percentile(mcpTimes, 95)
		a50, a95 := percentile(apiTimes, 50), percentile(apiTimes, 95)
		fmt.Fprintf(out, "%-26s %7.1f ms %7.1f ms %7.1f ms %7.1f ms\n", r.name, ms(m50), ms(m95), ms(a50), ms(a95))
		figs = append(figs, figure{"reads", r.name, "http_p50_ms", ms(m50)}, figure{"reads", r.name, "http_p95_ms", ms(m95)},
			figure{"reads", r.name, "api_p50_ms", ms(a50)}, figure{"reads", r.name, "api_p95_ms", ms(a95)})
	}
	return figs, nil
}

// callTool posts one stateless tools/call to /mcp and fails unless the
// tool answered without error.
func (a *apiClient) callTool(ctx context.Context, name string, args map[string]any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", a.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var res struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(data, &res) != nil || res.Result == nil || res.Result.IsError {
		return fmt.Errorf("tools/call %s: %d %.300s", name, resp.StatusCode, data)
	}
	return nil
}
