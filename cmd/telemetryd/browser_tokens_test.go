package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestDashboardTokensAndInventory creates a personal access token on the
// settings page, uses it on the API, deletes it there and sees it refused;
// then opens the tools page of an MCP whose server reported two tool sets
// and reads the inventory, the unused tool and the change timeline.
func TestDashboardTokensAndInventory(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	signup := a.must(201, "POST", "/v1/auth/signup", "", map[string]any{
		"email": fmt.Sprintf("tok-%d@example.com", time.Now().UnixNano()), "password": "a long password", "name": "Tok"})
	token := signup["token"].(string)
	mcp := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": "inventoried"})["id"].(string)
	key := a.must(201, "POST", "/v1/mcps/"+mcp+"/keys", token, map[string]any{"name": "k"})["key"].(string)
	report := func(version string, tools ...string) map[string]any {
		var list []map[string]any
		for i := 0; i+1 < len(tools); i += 2 {
			list = append(list, map[string]any{"name": tools[i], "schema_hash": strings.Repeat(tools[i+1], 64)})
		}
		return map[string]any{"server_version": version, "tools": list}
	}
	a.must(202, "POST", "/v1/ingest/inventory", key, report("1.0.0", "search", "a", "fetch", "b"))
	a.must(202, "POST", "/v1/ingest/inventory", key, report("1.1.0", "search", "c", "fetch", "b", "summarise", "d"))
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	items := []map[string]any{
		{"timestamp": now, "session_id": "s", "method": "tools/call", "name": "search"},
		{"timestamp": now, "session_id": "s", "method": "tools/call", "name": "fetch"},
		{"timestamp": now, "session_id": "s", "method": "tools/call", "name": "unlisted"},
	}
	if status, _ := postIngest(t, base, key, items, false); status != 202 {
		t.Fatal("ingest")
	}
	waitIngested(t, a, token, mcp, 3)

	b := newBrowser(t, base)
	defer b.checkConsole()
	sess, _ := json.Marshal(signup)
	b.do("sign in",
		chromedp.Navigate(base+"/app/login"),
		chromedp.WaitVisible(tid("login-form")),
		chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('mcpscope.session', %q)`, sess))),
	)
	b.do("open settings", chromedp.Navigate(base+"/app/settings"), chromedp.WaitVisible(tid("token-create-form")))
	b.waitFor("no token yet", `!!document.querySelector('[data-testid="tokens-table-empty"]')`)
	b.do("create a token", setField("token-name", "notebook"), chromedp.Click(tid("token-create-submit")), chromedp.WaitVisible(tid("token-display")))
	pat := eval[string](b, "read the token", `document.querySelector('[data-testid="token-display"]').textContent`)
	if !strings.HasPrefix(pat, "pat_") || !strings.Contains(eval[string](b, "config", `document.querySelector('[data-testid="token-mcp-config"]').textContent`), base+"/mcp") {
		t.Fatalf("token shown: %q", pat)
	}
	b.waitFor("listed by hint", fmt.Sprintf(`document.querySelector('[data-testid="token-hint"]')?.textContent === %q`, "pat_••••••••"+pat[len(pat)-4:]))
	b.shot("settings-token")
	if list := a.must(200, "GET", "/v1/mcps", pat, nil)["items"].([]any); len(list) != 1 {
		t.Fatalf("the token's read: %v", list)
	}
	b.do("delete it", chromedp.Click(tid("token-delete")), chromedp.WaitVisible(tid("confirm-ok")), chromedp.Click(tid("confirm-ok")))
	b.waitFor("deleted", `!!document.querySelector('[data-testid="tokens-table-empty"]')`)
	a.must(401, "GET", "/v1/mcps", pat, nil)

	b.do("open tools", chromedp.Navigate(base+"/app/mcps/"+mcp+"/tools"), chromedp.WaitVisible(tid("inventory-table")))
	b.waitFor("tools loaded", idle)
	rows := eval[[]string](b, "inventory rows", `[...document.querySelectorAll('[data-testid="inventory-row"]')].map(r => r.dataset.tool + ':' + r.textContent)`)
	if len(rows) != 4 || !strings.HasPrefix(rows[2], "summarise:summarise0unused") || !strings.HasPrefix(rows[3], "unlisted:unlisted1not listed") {
		t.Errorf("inventory rows %q", rows)
	}
	if got := eval[string](b, "unused", `document.querySelector('[data-testid="unused-tools"]').textContent`); got != "summarise" {
		t.Errorf("unused tools %q", got)
	}
	kinds := eval[[]string](b, "changes", `[...document.querySelectorAll('[data-testid="inventory-change"]')].map(c => c.dataset.kind + ' ' + c.querySelector('code').textContent)`)
	// Newest first: the second report's two changes, then the first's.
	if len(kinds) != 4 || !sameSet(strings.Join(kinds[:2], "|"), "changed search|added summarise") || !sameSet(strings.Join(kinds[2:], "|"), "added search|added fetch") {
		t.Errorf("change timeline %q", kinds)
	}
	// Graded: the changed search (no definitions reported) is risky with
	// definition_unknown; its details name the (unnamed) client that
	// called it in the minute before; the matched windows (as long as the
	// time since the change, seconds) hold no call.
	grades := eval[[]string](b, "grades", `[...document.querySelectorAll('[data-testid="inventory-change"]')].map(c => c.dataset.severity + ' ' + [...c.querySelectorAll('[data-testid="change-reasons"] li')].map(r => r.dataset.code).join(','))`)
	if len(grades) != 4 || !sameSet(strings.Join(grades, "|"), "risky definition_unknown|benign tool_added|benign tool_added|benign tool_added") {
		t.Errorf("change grades %q", grades)
	}
	b.do("open a change", chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-kind="changed"] [data-testid="change-details"]').click()`)),
		chromedp.WaitVisible(tid("change-detail")))
	if got := eval[string](b, "clients", `document.querySelector('[data-testid="change-clients"]').textContent`); got != "(unnamed) (1 calls)" {
		t.Errorf("affected clients: %q", got)
	}
	if got := eval[string](b, "before", `document.querySelector('[data-testid="change-before"]').textContent + '|' + document.querySelector('[data-testid="change-after"]').textContent`); got != "Before: 0 calls, 0 errors (0%)|After: 0 calls, 0 errors (0%)" {
		t.Errorf("before and after the change: %q", got)
	}
	b.shot("tools-inventory-change")
	b.shot("tools-inventory")
}
