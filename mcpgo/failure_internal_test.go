package mcpgo

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
)

func TestScrubValues(t *testing.T) {
	for _, c := range []struct{ msg, args, want string }{
		{`type: seven has type "string"`, `{"days":"seven"}`, `type: <value> has type "string"`},
		{"maximum: 99/1 is greater than 7.000000", `{"days":99}`, "maximum: <value> is greater than 7.000000"},
		// Whole values only: 7 stays in 70 and 7.000000, "a" in "has".
		{"maximum: 70 is greater than 7.000000, has a", `{"n":7,"s":"a"}`, "maximum: 70 is greater than 7.000000, has <value>"},
		{`enum: "a\"b" not in [x]; deep`, `{"o":{"l":["a\"b","deep"]}}`, `enum: "<value>" not in [x]; <value>`},
		{"no values here", `not json`, "no values here"},
		{"true is not a string", `{"b":true}`, "<value> is not a string"},
	} {
		if got := scrubValues(c.msg, json.RawMessage(c.args)); got != c.want {
			t.Errorf("scrubValues(%q, %s) = %q, want %q", c.msg, c.args, got, c.want)
		}
	}
}

// BenchmarkSetFailure is what the failure fields cost a tools/call with a
// 1 KB answer: the args_hash (HMAC of the canonical arguments) and the
// result's size (one more marshal of the result).
func BenchmarkSetFailure(b *testing.B) {
	t := &Telemetry{}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_forecast", Arguments: json.RawMessage(`{"city":"Paris","days":3,"units":"metric"}`)}}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 1024)}}}
	b.ReportAllocs()
	for b.Loop() {
		it := analytics.Item{Method: "tools/call", Status: analytics.StatusOK, Timestamp: time.Unix(0, 0)}
		t.setFailure(&it, req, res, nil)
	}
}
