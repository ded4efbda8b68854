package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// TestToolChangesGradedAndKept records definitions with their reports:
// a required property added is a breaking change with both definitions
// kept (once each) and a diff; an outputSchema edit the schema_hash does
// not cover is still a change; the reads filter by severity and tool,
// and a change of another MCP is not found.
func TestToolChangesGradedAndKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t, accounts.AuthPolicy{})
	ctx := context.Background()
	s := f.signup(t, "tc")
	m, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.mcps.CreateMCP(ctx, s.Account.ID, accounts.NewMCP{Name: "o"})
	if err != nil {
		t.Fatal(err)
	}
	inv := NewInventoryService(f.db)
	tool := func(name, def string) analytics.InventoryReportTool {
		var v map[string]any
		if err := json.Unmarshal([]byte(def), &v); err != nil {
			t.Fatal(err)
		}
		d := func(k string) any { return v[k] }
		desc, _ := v["description"].(string)
		h, err := analytics.ToolSchemaHash(&desc, d("inputSchema"), d("annotations"))
		if err != nil {
			t.Fatal(err)
		}
		return analytics.InventoryReportTool{Name: name, SchemaHash: h, Schema: json.RawMessage(def)}
	}
	v1 := `{"description":"Search","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},"outputSchema":{"type":"object"}}`
	v2 := `{"description":"Search","inputSchema":{"type":"object","properties":{"q":{"type":"string"},"locale":{"type":"string"}},"required":["q","locale"]},"outputSchema":{"type":"object"}}`
	v3 := `{"description":"Search","inputSchema":{"type":"object","properties":{"q":{"type":"string"},"locale":{"type":"string"}},"required":["q","locale"]},"outputSchema":{"type":"object","required":["hits"]}}`
	t0 := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	for i, r := range []analytics.InventoryReport{
		{ServerVersion: "1", Tools: []analytics.InventoryReportTool{tool("search", v1), tool("fetch", `{"description":"Fetch"}`)}},
		{ServerVersion: "1", Tools: []analytics.InventoryReportTool{tool("search", v1), tool("fetch", `{"description":"Fetch"}`)}},
		{ServerVersion: "2", Tools: []analytics.InventoryReportTool{tool("search", v2), tool("fetch", `{"description":"Fetch"}`)}},
		{ServerVersion: "3", Tools: []analytics.InventoryReportTool{tool("search", v3)}},
	} {
		if _, err := inv.RecordInventory(ctx, m.ID, t0.Add(time.Duration(i)*time.Minute), r); err != nil {
			t.Fatal(err)
		}
	}
	all, total, err := inv.RecentToolChanges(ctx, m.ID, t0, t0.Add(time.Hour), nil, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range all {
		got = append(got, c.Kind+" "+c.Tool+" "+*c.Severity+" "+c.Reasons[0].Code)
	}
	want := "removed fetch breaking tool_removed|changed search breaking output_narrowed|changed search breaking required_added|added fetch benign tool_added|added search benign tool_added"
	if strings.Join(got, "|") != want || total != 5 {
		t.Fatalf("changes %d %q\nwant %q", total, strings.Join(got, "|"), want)
	}
	search := "search"
	breaking, total, err := inv.RecentToolChanges(ctx, m.ID, t0, t0.Add(time.Hour), &search, analytics.SeverityBreaking, 1)
	if err != nil || len(breaking) != 1 || total != 2 || breaking[0].ID != all[1].ID {
		t.Fatalf("breaking changes of search: %v %d %+v", err, total, breaking)
	}
	c, before, after, err := inv.ToolChange(ctx, m.ID, all[2].ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tool != "search" || analytics.DefinitionHash(before) != analytics.DefinitionHash([]byte(v1)) || analytics.DefinitionHash(after) != analytics.DefinitionHash([]byte(v2)) {
		t.Fatalf("change %+v before %s after %s", c, before, after)
	}
	if d := analytics.DefinitionDiff(before, after); !strings.Contains(d, `+       "locale"`) {
		t.Fatalf("diff %s", d)
	}
	var n int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM tool_definitions WHERE mcp_id = $1`, m.ID).Scan(&n); err != nil || n != 4 {
		t.Fatalf("definitions kept: %d %v, want 4 (each once)", n, err)
	}
	for _, id := range []string{all[0].ID, "x", "0"} {
		if _, _, _, err := inv.ToolChange(ctx, other.ID, id); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
			t.Fatalf("change %s of another MCP: %v", id, err)
		}
	}
}
