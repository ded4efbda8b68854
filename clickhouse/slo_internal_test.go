package clickhouse

import (
	"testing"

	"github.com/mcpscope/telemetry/analytics"
)

// TestSLIBatchLen: a batch is bounded by the distinct MCP ids and tools
// its statements name, not by its SLOs, so ten SLOs of one MCP cost one id.
func TestSLIBatchLen(t *testing.T) {
	var qs []analytics.SLIQuery
	for _, mcp := range []string{"mcp_aaaaaaaa", "mcp_bbbbbbbb", "mcp_cccccccc"} { // 12 bytes, counted 20
		for k := range 10 {
			q := analytics.SLIQuery{MCPID: mcp}
			if k%2 == 0 {
				q.Tool = "search" // 6 bytes, counted 14, once per batch
			}
			qs = append(qs, q)
		}
	}
	for _, c := range []struct{ limit, want int }{
		{0, 1},        // always at least one
		{20, 1},       // the first MCP, not yet its tool
		{34, 10},      // the first MCP and the tool: its ten SLOs
		{53, 10},      // one byte short of the second MCP
		{54, 20},      // two MCPs
		{74, 30},      // all three
		{1 << 20, 30}, // all
	} {
		if got := sliBatchLen(qs, c.limit); got != c.want {
			t.Errorf("limit %d: %d queries, want %d", c.limit, got, c.want)
		}
	}
	if got := sliBatchLen(qs[:1], 0); got != 1 {
		t.Errorf("one query: %d", got)
	}
}
