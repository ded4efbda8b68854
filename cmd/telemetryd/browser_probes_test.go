package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardProbes opens the probe page of an MCP whose probe checks a
// go-sdk server, stopped meanwhile: the status, the uptime, the bars and
// the latency line, and the last errors.
func TestDashboardProbes(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	target := newGoTarget(t, true, nil)
	_, base := startMain(t, probeConfig(t))
	a := api{t, base}
	signup := a.must(201, "POST", "/v1/auth/signup", "", map[string]any{
		"email": fmt.Sprintf("probe-%d@example.com", time.Now().UnixNano()), "password": "a long password", "name": "Probe"})
	token := signup["token"].(string)
	mcp := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": "probed"})["id"].(string)
	id := a.must(201, "POST", "/v1/mcps/"+mcp+"/probes", token, map[string]any{"url": target.url()})["id"].(string)
	a.waitProbe(token, id, 15*time.Second, func(p map[string]any) bool { return p["status"] == "up" })
	target.stop()
	a.waitProbe(token, id, 15*time.Second, func(p map[string]any) bool { return p["status"] == "down" })
	eventually(t, 10*time.Second, func() error { // the failed check reached the results
		items := a.must(200, "GET", "/v1/probes/"+id+"/results", token, nil)["items"].([]any)
		if len(items) == 0 || items[0].(map[string]any)["status"] != "down" {
			return fmt.Errorf("results %v", items)
		}
		return nil
	})

	b := newBrowser(t, base)
	defer b.checkConsole()
	sess, _ := json.Marshal(signup)
	b.do("sign in",
		chromedp.Navigate(base+"/app/login"),
		chromedp.WaitVisible(tid("login-form")),
		chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('mcpscope.session', %q)`, sess))),
	)
	b.do("open probes", chromedp.Navigate(base+"/app/mcps/"+mcp+"/probes"), chromedp.WaitVisible(tid("probe-status")))
	b.waitFor("probes loaded", idle)
	if s := eval[string](b, "status", `document.querySelector('[data-testid="probe-status"]').textContent`); s != "down" {
		t.Errorf("status %q", s)
	}
	if e := eval[string](b, "error", `document.querySelector('[data-testid="probe-error"]').textContent`); !strings.Contains(e, "connection refused") {
		t.Errorf("error %q", e)
	}
	if n := eval[int](b, "bars", `document.querySelectorAll('[data-testid="probe-bars"] rect').length`); n < 2 {
		t.Errorf("%d bars", n)
	}
	if n := eval[int](b, "error rows", `document.querySelectorAll('[data-testid="probe-error-row"]').length`); n < 1 {
		t.Errorf("%d error rows", n)
	}
	if !eval[bool](b, "latency", `!!document.querySelector('[data-testid="probe-latency"] polyline')`) {
		t.Error("no latency line")
	}
	b.shot("probes")

	// The MCP's overview charts mark the down period (the read behind
	// them answers it too).
	down := a.must(200, "GET", "/v1/mcps/"+mcp+"/probes/down-periods", token, nil)["items"].([]any)
	if len(down) == 0 || !strings.Contains(fmt.Sprint(down[len(down)-1]), "connection refused") {
		t.Fatalf("down periods %v", down)
	}
	b.do("overview", chromedp.Navigate(base+"/app/mcps/"+mcp+"/overview"), chromedp.WaitVisible(tid("overview-down-periods")))
	b.waitFor("down period shaded on both charts", `[...document.querySelectorAll('[data-testid^="chart-"]')].filter((f) => Number(f.dataset.marksDrawn) >= 1).length >= 2`)
	if s := eval[string](b, "down note", `document.querySelector('[data-testid="overview-down-periods"]').textContent`); !strings.Contains(s, "connect: connection refused") || !strings.Contains(s, "UTC") {
		t.Errorf("down note %q", s)
	}
	b.shot("overview-down")
}
