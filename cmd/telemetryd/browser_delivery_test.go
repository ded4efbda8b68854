package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpscope/telemetry/internal/testkit/chatstub"
)

// TestDashboardDelivery: the channels page shows a revoked Slack webhook as
// broken, reconnecting it and "Send test" work; the delivery log shows the
// failed delivery's attempts and error and "Retry now" sends it; PagerDuty
// and a signed webhook connect through their own forms; the rule form
// lists the catalogue's channels and saves renotify_minutes and severity.
func TestDashboardDelivery(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := newDeliveryEnv(t, false)
	e.chat.SetRespond(func(r chatstub.Request, n int) chatstub.Answer {
		if strings.HasPrefix(r.Path, "/services/") {
			return chatstub.Answer{Status: 404, Body: "no_service"}
		}
		return chatstub.Answer{}
	})
	rule := e.fire(t, "browser rule", "slack")
	d := e.waitStatus(t, rule, "slack", "failed", 5*time.Second)

	login := e.a.must(200, "POST", "/v1/auth/login", "", map[string]any{"email": e.email, "password": "a long password"})
	sess, _ := json.Marshal(login)
	b := newBrowser(t, e.a.base)
	defer b.checkConsole()
	b.do("sign in",
		chromedp.Navigate(e.a.base+"/app/login"),
		chromedp.WaitVisible(tid("login-form")),
		chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('mcpscope.session', %q)`, sess))),
	)

	b.do("open channels", chromedp.Navigate(e.a.base+"/app/channels"), chromedp.WaitVisible(tid("channel-broken-slack")))
	b.shot("channels-broken")
	e.chat.SetRespond(nil)
	b.do("reconnect slack", setField("webhook-url-slack", slackHook), chromedp.Click(tid("webhook-connect-slack")))
	b.do("send test", chromedp.WaitVisible(tid("channel-test-slack")), chromedp.Click(tid("channel-test-slack")))
	b.waitFor("test sent", `document.querySelector('[data-testid="channel-test-result-slack"]')?.dataset.status === "sent"`)
	b.shot("channels-test-sent")

	b.do("open the failed deliveries", chromedp.Navigate(e.a.base+"/app/deliveries?status=failed"), chromedp.WaitVisible(tid("delivery-retry")))
	b.waitFor("last error shown", `document.querySelector('[data-testid="delivery-last-error"]').textContent === "webhook_revoked"`)
	b.shot("deliveries-failed")
	b.do("retry now", chromedp.Click(tid("delivery-retry")))
	eventually(t, 10*time.Second, func() error {
		if got := e.deliveries(t, rule)["slack"]; got["status"] != "sent" || got["id"] != d["id"] {
			return fmt.Errorf("after retry now: %v", got)
		}
		return nil
	})

	// The new destinations' connect forms come from the catalogue's
	// connect_fields: PagerDuty asks for its integration key, the signed
	// webhook shows its signing secret once.
	b.do("back to channels", chromedp.Navigate(e.a.base+"/app/channels"), chromedp.WaitVisible(tid("connect-routing_key-pagerduty")))
	b.do("connect pagerduty (EU)", setField("connect-routing_key-pagerduty", pdKey),
		setField("connect-region-pagerduty", "eu"), chromedp.Click(tid("webhook-connect-pagerduty")))
	b.waitFor("pagerduty connected", `document.querySelector('[data-testid="webhook-hint-pagerduty"]')?.textContent.endsWith("stuv (EU)")`)
	b.do("connect a webhook", setField("webhook-url-webhook", "https://hooks.example.org/alerts"), chromedp.Click(tid("webhook-connect-webhook")))
	b.waitFor("signing secret shown", `(document.querySelector('[data-testid="signing-secret-webhook"]')?.textContent || "").includes("whsec_")`)
	b.shot("channels-new-destinations")

	b.do("open the rule", chromedp.Navigate(e.a.base+"/app/mcps/"+e.mcp+"/alerts/"+rule), chromedp.WaitVisible(tid("rule-renotify")))
	b.do("pagerduty is a channel of the form", chromedp.WaitVisible(tid("rule-channel-pagerduty")), chromedp.Click(tid("rule-channel-pagerduty")))
	b.do("remind every 15 minutes, critical", setField("rule-renotify", "15"),
		setField("rule-severity", "critical"), chromedp.Click(tid("rule-submit")))
	eventually(t, 10*time.Second, func() error {
		r := e.a.must(200, "GET", "/v1/rules/"+rule, e.token, nil)
		if num(r["renotify_minutes"]) != 15 || r["severity"] != "critical" || !strings.Contains(fmt.Sprint(r["channels"]), "pagerduty") {
			return fmt.Errorf("rule after the form: %v", r)
		}
		return nil
	})
}
