package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardEmailVerification: Settings shows an unverified address
// with a re-send button (limited to one a minute, the answer shown), the
// link of the verification email opens the verify page, which confirms
// the address, and Settings then shows it verified.
func TestDashboardEmailVerification(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	e := startDeliveryEnv(t, true, nil)
	signup := e.a.must(201, "POST", "/v1/auth/signup", "", map[string]any{"email": "web-" + e.email, "password": "a long password", "name": "Web"})
	addr := signup["user"].(map[string]any)["email"].(string)
	token := e.md.verificationTokens(t, addr, 1)[0]

	b := newBrowser(t, e.a.base)
	defer b.checkConsole()
	sess, _ := json.Marshal(signup)
	b.do("sign in",
		chromedp.Navigate(e.a.base+"/app/login"),
		chromedp.WaitVisible(tid("login-form")),
		chromedp.Action[chromedp.Void](chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('mcpscope.session', %q)`, sess))),
	)
	b.do("open settings", chromedp.Navigate(e.a.base+"/app/settings"), chromedp.WaitVisible(tid("email-verification")))
	if v := eval[string](b, "state", `document.querySelector('[data-testid="email-verification"]').dataset.verified`); v != "false" {
		t.Fatalf("verified %q on a new address", v)
	}
	b.do("re-send at once", chromedp.Click(tid("verification-resend")))
	b.waitFor("limited", `document.querySelector('[data-testid="verification-result"] [data-testid="problem"]')?.dataset.code === 'rate_limited'`)
	if _, err := e.m.PG.Pool.Exec(context.Background(), `UPDATE users SET verification_sent_at = now() - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	b.do("re-send a minute later", chromedp.Click(tid("verification-resend")))
	b.waitFor("sent", `/on its way/.test(document.querySelector('[data-testid="verification-result"]').textContent)`)
	tokens := e.md.verificationTokens(t, addr, 2)
	if tokens[1] == token {
		t.Fatal("the re-sent link carries the old token")
	}
	b.do("open the link", chromedp.Navigate(e.a.base+"/app/verify#token="+tokens[1]), chromedp.WaitVisible(tid("verify-ok")))
	b.shot("verify-ok")
	b.do("settings again", chromedp.Navigate(e.a.base+"/app/settings"), chromedp.WaitVisible(tid("email-verification")))
	b.waitFor("verified", `document.querySelector('[data-testid="email-verification"]').dataset.verified === 'true'`)
	b.do("an old link", chromedp.Navigate(e.a.base+"/app/verify#token="+token), chromedp.WaitVisible(tid("verify-result")))
	b.waitFor("refused", `document.querySelector('[data-testid="verify-result"] [data-testid="problem"]')?.dataset.code === 'invalid'`)
}
