// Package weather is issue 39's agent-failure script for servers of the
// official Go MCP SDK: a weather server and the calls agents get wrong
// with it (a misspelled tool, arguments the schema refuses, a handler that
// fails, an isError result, a 100 KB answer, the same call over and over,
// a prompt and a resource the server lacks). The mcpgo tests check what the
// middleware sends for it; cmd/telemetryd's read it back from the service.
package weather

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Big is big_report's answer: 100 KB.
var Big = strings.Repeat("x", 100*1024)

// NewServer builds the server: get_forecast (city, days 1 to 7), explode
// (its handler returns an error), refuse (an isError result), big_report
// (a 100 KB answer), the prompt summary and the resource weather://stations.
func NewServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "3.0.0"}, nil)
	type forecastIn struct {
		City string `json:"city"`
		Days int    `json:"days"`
	}
	schema := &jsonschema.Schema{
		Type:     "object",
		Required: []string{"city", "days"},
		Properties: map[string]*jsonschema.Schema{
			"city": {Type: "string"},
			"days": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(7.0)},
		},
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
	mcp.AddTool(server, &mcp.Tool{Name: "big_report"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: Big}}}, nil, nil
	})
	server.AddPrompt(&mcp.Prompt{Name: "summary"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "summarize"}}}}, nil
	})
	server.AddResource(&mcp.Resource{URI: "weather://stations", Name: "stations"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "PAR LYS"}}}, nil
	})
	return server
}

// Call is one tools/call of the script.
type Call struct {
	Name string
	Args any
}

// Loop are the arguments of the call the agent repeats.
var Loop = map[string]any{"city": "Paris", "days": 3}

// Script is the script's tools/call sequence, 13 calls: 0 get_forcast (a
// typo, with Loop's arguments), 1 and 2 get_forecast refused (days
// "seven", days 99), 3 explode, 4 refuse, 5 big_report, 6 to 10
// get_forecast with Loop five times, 11 the same arguments with the keys in
// another order, 12 get_forecast for another city. In a session, calls 7 to
// 11 repeat the call before them (repeat 1 to 5).
func Script() []Call {
	calls := []Call{
		{"get_forcast", Loop},
		{"get_forecast", map[string]any{"city": "Atlantis-7f3a", "days": "seven"}},
		{"get_forecast", map[string]any{"city": "Atlantis-7f3a", "days": 99}},
		{"explode", map[string]any{}},
		{"refuse", map[string]any{}},
		{"big_report", map[string]any{}},
	}
	for range 5 {
		calls = append(calls, Call{"get_forecast", Loop})
	}
	return append(calls,
		Call{"get_forecast", json.RawMessage(`{"days":3,"city":"Paris"}`)},
		Call{"get_forecast", map[string]any{"city": "Lyon", "days": 3}})
}

// Run lists the tools, makes the script's calls through cs and asks for the
// prompt "sumary" and the resource weather://station, which the server
// does not have. It returns each call's result, nil for a JSON-RPC error
// answer, and the first error that the script did not expect.
func Run(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.CallToolResult, error) {
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return nil, err
	}
	var results []*mcp.CallToolResult
	for _, c := range Script() {
		// Calls in memory take well under a millisecond, and the service
		// orders a session's items of one millisecond and one batch by
		// item id (docs/failures.md, "Limits"): an agent's calls are
		// milliseconds apart, so the script's are too.
		time.Sleep(2 * time.Millisecond)
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.Name, Arguments: c.Args})
		if err != nil {
			r = nil
		}
		results = append(results, r)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "sumary"}); err == nil {
		return nil, errors.New("the prompt sumary exists")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "weather://station"}); err == nil {
		return nil, errors.New("the resource weather://station exists")
	}
	return results, nil
}
