package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestDashboardExportButtons signs in (the session put where the dashboard
// keeps it), presses "Export CSV" on the overview and "Export NDJSON" on the
// sessions page, and compares the files the browser saved with what the
// API streams for the same range.
func TestDashboardExportButtons(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	_, base := startMain(t, cfg)
	a := api{t, base}
	signup := a.must(201, "POST", "/v1/auth/signup", "", map[string]any{
		"email": fmt.Sprintf("exp-%d@example.com", time.Now().UnixNano()), "password": "a long password", "name": "Exp"})
	token := signup["token"].(string)
	mcp := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": "exported"})["id"].(string)
	key := a.must(201, "POST", "/v1/mcps/"+mcp+"/keys", token, map[string]any{"name": "k"})["key"].(string)
	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	var items []map[string]any
	for i := 0; i < 7; i++ {
		items = append(items, map[string]any{"id": fmt.Sprint("e", i), "timestamp": now, "session_id": fmt.Sprint("s", i%3),
			"method": "tools/call", "name": "search", "duration_ms": 10 + i, "error_message": "a, \"quoted\" message"})
	}
	if status, _ := postIngest(t, base, key, items, false); status != 202 {
		t.Fatal("ingest")
	}
	waitIngested(t, a, token, mcp, 7)

	dir := t.TempDir()
	b := newBrowser(t, base)
	defer b.checkConsole()
	sess, _ := json.Marshal(signup)
	b.do("sign in",
		chromedp.Navigate(base+"/app/login"),
		chromedp.WaitVisible(tid("login-form")),
		chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('mcpscope.session', %q)`, sess))),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
			return err
		}),
	)
	today := time.Now().UTC().Format("2006-01-02")
	from := time.Now().UTC().AddDate(0, 0, -6).Format("2006-01-02")
	for _, c := range []struct{ page, format string }{{"overview", "csv"}, {"sessions", "ndjson"}} {
		b.do("open "+c.page,
			chromedp.Navigate(base+"/app/mcps/"+mcp+"/"+c.page),
			chromedp.WaitVisible(tid("export-"+c.format)),
		)
		b.waitFor(c.page+" loaded", idle)
		b.shot(c.page + "-export")
		b.do("export "+c.format, chromedp.Click(tid("export-"+c.format)))
		name := mcp + "_" + from + "_" + today + "." + c.format
		b.waitFor("export status", fmt.Sprintf(`document.querySelector('[data-testid="export-status"]').textContent === %q`, "Saved "+name))
		var got []byte
		eventually(t, 10*time.Second, func() error {
			var err error
			got, err = os.ReadFile(filepath.Join(dir, name))
			if err != nil || len(got) == 0 {
				return fmt.Errorf("no download %s yet: %v", name, err)
			}
			return nil
		})
		_, want := getRaw(t, base, "/v1/mcps/"+mcp+"/export?format="+c.format, token)
		if string(got) != want || len(want) == 0 {
			t.Errorf("%s download:\n%s\nwant:\n%s", c.format, got, want)
		}
	}

	// The owner keeps 30 days from the settings page.
	b.do("open settings", chromedp.Navigate(base+"/app/settings"), chromedp.WaitVisible(tid("retention-form")))
	b.waitFor("retention shown", `document.querySelector('[data-testid="retention-kept"]').textContent.includes("1096 days")`)
	b.do("set 30 days", setField("retention-days", "30"), chromedp.Click(tid("retention-save")))
	kept := time.Now().UTC().AddDate(0, 0, -29).Format("2006-01-02")
	b.waitFor("retention saved", fmt.Sprintf(`document.querySelector('[data-testid="retention-kept"]').textContent.includes("kept 30 days (since %s)")`, kept))
	b.shot("settings-retention")
	if acc := a.must(200, "GET", "/v1/account", token, nil); num(acc["retention_days"]) != 30 || acc["kept_from"] != kept {
		t.Errorf("account after the settings page: %v", acc)
	}
}
