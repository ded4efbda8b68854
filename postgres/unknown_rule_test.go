package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// TestUnknownToolCallsRulePass measures unknown_tool_calls in a full pass:
// items with error_kind unknown_tool, and tools/call items naming a tool
// the MCP's inventory did not list in the window (an MCP without an
// inventory counts only the first), per rule window and named tool.
func TestUnknownToolCallsRulePass(t *testing.T) {
	t.Parallel()
	e := newEvalEnv(t, 1)
	ctx := context.Background()
	inv := postgres.NewInventoryService(e.db)
	e.s.Eval.Unknown = analytics.UnknownToolRuleCounter{Listed: inv, Calls: e.ch.Reads}
	bare := testdb.AddMCP(t, e.db, e.tm.AccountID) // never reports an inventory
	if _, err := inv.RecordInventory(ctx, e.tm.MCPID, e.now.Add(-time.Hour), analytics.InventoryReport{ServerVersion: "1",
		Tools: []analytics.InventoryReportTool{{Name: "get_forecast", SchemaHash: strings.Repeat("a", 64)}}}); err != nil {
		t.Fatal(err)
	}
	var rows []analytics.StoredRow
	call := func(mcpID, name, kind string, ago time.Duration) {
		it := analytics.Item{ID: testdb.RandHex(8), Timestamp: e.now.Add(-ago), SessionID: "s", Method: "tools/call", Name: name, Status: analytics.StatusOK}
		if kind != "" {
			it.Status, it.ErrorKind, it.ErrorType = analytics.StatusError, kind, kind
		}
		rows = append(rows, analytics.StoredRow{AccountID: e.tm.AccountID, MCPID: mcpID, Node: "t", Seq: uint64(len(rows)), ReceivedAt: e.now, Item: it})
	}
	for _, mcpID := range []string{e.tm.MCPID, bare} {
		call(mcpID, "get_forecast", "", 2*time.Minute)                            // listed: not unknown
		call(mcpID, "get_forcast", analytics.ErrorKindUnknownTool, 2*time.Minute) // the SDK said so
		call(mcpID, "delete_all", "", 2*time.Minute)                              // not listed
		call(mcpID, "delete_all", "", 3*time.Minute)
		call(mcpID, "delete_all", "", 20*time.Minute) // outside the 5-minute windows
	}
	if err := e.ch.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	mk := func(mcpID, name string, tool *string, cmp string, threshold float64, window int, state string) {
		r, err := e.s.Rules.CreateRule(ctx, e.tm.AccountID, mcpID, alerting.RuleCreate{Name: name, Metric: alerting.MetricUnknownToolCalls, Tool: tool,
			Comparator: cmp, Threshold: threshold, WindowMinutes: window, Channels: []string{alerting.ChannelInApp}})
		if err != nil {
			t.Fatal(err)
		}
		want[r.ID] = state
	}
	mk(e.tm.MCPID, "5m >= 3", nil, ">=", 3, 5, alerting.StateFiring)
	mk(e.tm.MCPID, "5m > 3", nil, ">", 3, 5, alerting.StateOK)
	mk(e.tm.MCPID, "60m >= 4", nil, ">=", 4, 60, alerting.StateFiring)
	mk(e.tm.MCPID, "60m > 4", nil, ">", 4, 60, alerting.StateOK)
	mk(e.tm.MCPID, "delete_all 5m >= 2", ptr("delete_all"), ">=", 2, 5, alerting.StateFiring)
	mk(e.tm.MCPID, "delete_all 5m > 2", ptr("delete_all"), ">", 2, 5, alerting.StateOK)
	mk(e.tm.MCPID, "get_forecast 5m > 0", ptr("get_forecast"), ">", 0, 5, alerting.StateOK)
	mk(bare, "bare 60m >= 1", nil, ">=", 1, 60, alerting.StateFiring)
	mk(bare, "bare 60m > 1", nil, ">", 1, 60, alerting.StateOK)

	if sum := e.pass(t, e.now); sum.Rules != len(want) || sum.Fired != 4 || sum.Failed != 0 {
		t.Fatalf("pass %+v", sum)
	}
	e.wantStates(t, want)
	// One rule on demand (POST /evaluate's path) measures the same.
	for id := range want {
		ev := e.evaluate(t, id, e.now)
		var name string
		if err := e.db.Pool.QueryRow(ctx, `SELECT name FROM rules WHERE id = $1`, id).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if wantV := map[string]float64{"5m >= 3": 3, "5m > 3": 3, "60m >= 4": 4, "60m > 4": 4, "delete_all 5m >= 2": 2, "delete_all 5m > 2": 2,
			"get_forecast 5m > 0": 0, "bare 60m >= 1": 1, "bare 60m > 1": 1}[name]; ev.Value == nil || *ev.Value != wantV {
			t.Errorf("%s: evaluated %v, want %v", name, ev.Value, wantV)
		}
	}
}
