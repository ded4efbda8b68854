package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPEndpointSelfTelemetry runs a service whose /mcp is instrumented
// (self_telemetry) towards a second service, drives /mcp with the
// official Go SDK client and a personal access token, and reads the calls
// back from the receiving service's dashboard reads.
func TestMCPEndpointSelfTelemetry(t *testing.T) {
	t.Parallel()
	chAddr := testenv.ClickHouseAddr(t)
	_, receiver := startMain(t, testConfig(t, chAddr))
	r := api{t, receiver}
	owner, selfMCP, key := r.newTenant("self")

	cfg := testConfig(t, chAddr)
	cfg.Ingest.NodeID = "self-telemetry-b"
	cfg.SelfTelemetry.IngestKey = key
	cfg.SelfTelemetry.Endpoint = receiver
	m, base := startMain(t, cfg)
	if m.SelfTelemetry == nil {
		t.Fatal("self_telemetry configured but /mcp not instrumented")
	}
	a := api{t, base}
	token, mcpID, _ := a.newTenant("reader")
	pat := a.must(201, "POST", "/v1/account/tokens", token, map[string]any{"name": "mcp", "scope": "read"})["token"].(string)

	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "self-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearerRT{pat}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_overview", Arguments: map[string]any{"mcp_id": mcpID}})
	if err != nil || res.IsError {
		t.Fatalf("get_overview: %v %v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_overview", Arguments: map[string]any{"mcp_id": "mcp_unknown"}})
	if err != nil || !res.IsError {
		t.Fatalf("unknown MCP: %v %v", err, res)
	}

	eventually(t, 20*time.Second, func() error {
		_, tools := r.do("GET", "/v1/mcps/"+selfMCP+"/tools", owner, nil)
		items, _ := tools["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["name"] != "get_overview" || items[0].(map[string]any)["calls"] != 2.0 ||
			items[0].(map[string]any)["errors"] != 1.0 {
			return fmt.Errorf("tools of the self MCP: %v", tools)
		}
		return nil
	})
}
