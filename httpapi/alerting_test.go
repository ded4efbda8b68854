package httpapi

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// alertingServer is the API with the real account, ingest, metric and
// alerting services on the package's PostgreSQL database and a ClickHouse
// database of the test's own.
func alertingServer(t *testing.T) (*Server, *clickhouse.DB) {
	t.Helper()
	opts, db, cdb := accountOptions(t, accounts.AuthPolicy{})
	key := make([]byte, alerting.SecretKeyLen)
	for i := range key {
		key[i] = byte(7 * (i + 1))
	}
	box, err := alerting.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	opts.Channels = postgres.NewChannelService(db, box)
	opts.Rules = postgres.NewRuleService(db)
	ev := alerting.NewRuleEvaluator(postgres.NewEvaluationStore(db), cdb.Reads, db.TransitionConcurrency())
	ev.Changes = postgres.NewInventoryService(db)
	ev.Releases = analytics.ReleaseComparer{Reader: cdb.Reads}
	opts.Evaluator = ev
	opts.Inbox = postgres.NewInboxService(db)
	opts.Notifications = postgres.NewNotificationService(db)
	opts.SLOs, opts.SLI = postgres.NewSLOService(db), cdb.Reads
	return New(opts), cdb
}

// apiTeam is an account made through the API: an owner, an admin, a member
// and an MCP.
type apiTeam struct {
	account, mcp               string
	owner, admin, member       string // session tokens
	ownerID, adminID, memberID string
	otherOwner, otherMCP       string // a second account, for isolation
	otherAccount               string
}

func join(t *testing.T, s *Server, owner, role string) (token, userID string) {
	t.Helper()
	email := uniqueEmail(role)
	inv := expect(t, s, "POST", "/v1/account/members", owner, `{"email":`+jsonString(email)+`,"role":"`+role+`"}`, 201, "")
	m := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(email, role, "invite_token", inv["invite_token"].(string)), 201, "")
	return m["token"].(string), m["user"].(map[string]any)["id"].(string)
}

func newAPITeam(t *testing.T, s *Server) apiTeam {
	t.Helper()
	var tm apiTeam
	o := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("owner"), "Owner"), 201, "")
	tm.owner, tm.ownerID = o["token"].(string), o["user"].(map[string]any)["id"].(string)
	tm.account = o["account"].(map[string]any)["id"].(string)
	tm.mcp = expect(t, s, "POST", "/v1/mcps", tm.owner, `{"name":"docs"}`, 201, "")["id"].(string)
	tm.admin, tm.adminID = join(t, s, tm.owner, "admin")
	tm.member, tm.memberID = join(t, s, tm.owner, "member")
	x := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("other"), "Other"), 201, "")
	tm.otherOwner, tm.otherAccount = x["token"].(string), x["account"].(map[string]any)["id"].(string)
	tm.otherMCP = expect(t, s, "POST", "/v1/mcps", tm.otherOwner, `{"name":"theirs"}`, 201, "")["id"].(string)
	return tm
}

const (
	apiSlackSecret = "Zq3xLkP9mW2vB7nR4tY6uI8o"
	apiSlackURL    = "https://hooks.slack.com/services/T0ABC/B0DEF/" + apiSlackSecret
	ruleAllChans   = `{"name":"Search errors","metric":"error_rate","comparator":">","threshold":0.1,"window_minutes":5,"channels":["slack","email","in_app","discord"]}`
)

// The alerting walk-through (docs/alerting.md), as a new user would: connect Slack, create a
// rule naming Slack, email, in-app and an unconnected Discord, send errors
// until it fires, see the inbox items, the queued email and Slack
// deliveries, and nothing for Discord.
func TestAlertingWalkthrough(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)

	ch := expect(t, s, "PUT", "/v1/account/channels/slack/webhook", tm.admin, `{"url":`+jsonString(apiSlackURL)+`}`, 200, "")
	if ch["channel"] != "slack" || ch["connected"] != true || ch["webhook_hint"] != "hooks.slack.com/services/T0ABC/B0DEF/"+alerting.WebhookMask || len(ch) != 3 {
		t.Fatalf("connect: %v", ch)
	}
	r := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.admin, ruleAllChans, 201, "")
	if keysOf(r) != "baseline,channels,comparator,created_at,enabled,error_kind,id,last_fired_at,mcp_id,metric,min_calls,min_severity,name,notify_on_resolve,renotify_minutes,sensitivity,severity,snoozed_until,state,threshold,tool,window_minutes" ||
		r["severity"] != "error" || r["baseline"] != nil || r["min_calls"] != 0.0 || r["notify_on_resolve"] != false || r["snoozed_until"] != nil ||
		r["state"] != "ok" || r["enabled"] != true || r["tool"] != nil || r["last_fired_at"] != nil || !isUTCTime(r["created_at"]) || r["mcp_id"] != tm.mcp {
		t.Fatalf("rule %v", r)
	}
	ruleID := r["id"].(string)

	// Nothing yet: evaluating measures 0 and stays ok.
	ev := expect(t, s, "POST", "/v1/rules/"+ruleID+"/evaluate", tm.owner, "", 200, "")
	if ev["state"] != "ok" || ev["fired"] != false || ev["value"] != 0.0 {
		t.Fatalf("quiet evaluation %v", ev)
	}
	testdb.Events(t, cdb, tm.account, tm.mcp, "search_docs", time.Now().Add(-time.Minute), 8, 4)
	ev = expect(t, s, "POST", "/v1/rules/"+ruleID+"/evaluate", tm.owner, "", 200, "")
	if ev["state"] != "firing" || ev["fired"] != true || ev["value"] != 0.5 {
		t.Fatalf("firing evaluation %v", ev)
	}
	ev = expect(t, s, "POST", "/v1/rules/"+ruleID+"/evaluate", tm.owner, "", 200, "")
	if ev["state"] != "firing" || ev["fired"] != false {
		t.Fatalf("no refire: %v", ev)
	}
	got := expect(t, s, "GET", "/v1/rules/"+ruleID, tm.member, "", 200, "")
	if got["state"] != "firing" || !isUTCTime(got["last_fired_at"]) {
		t.Fatalf("rule after firing %v", got)
	}

	for _, who := range []string{tm.owner, tm.admin, tm.member} {
		in := expect(t, s, "GET", "/v1/account/inbox", who, "", 200, "")
		items := in["items"].([]any)
		if len(items) != 1 || in["unread_count"] != 1.0 || in["next_cursor"] != nil {
			t.Fatalf("inbox %v", in)
		}
		it := items[0].(map[string]any)
		if keysOf(it) != "body,created_at,id,mcp_id,read,read_at,rule_id,rule_name,title" || it["rule_id"] != ruleID ||
			it["rule_name"] != "Search errors" || it["read"] != false || it["read_at"] != nil || !isUTCTime(it["created_at"]) ||
			!strings.HasPrefix(it["title"].(string), "Firing: Search errors") {
			t.Fatalf("inbox item %v", it)
		}
	}

	log := expect(t, s, "GET", "/v1/account/notifications", tm.owner, "", 200, "")
	counts := map[string]int{}
	for _, x := range log["items"].([]any) {
		n := x.(map[string]any)
		if keysOf(n) != "attempts,channel,created_at,id,last_attempt_at,last_error,mcp_id,message_id,next_attempt_at,recipient_user_id,rule_id,sent_at,severity,status,title" {
			t.Fatalf("notification %v", n)
		}
		counts[fmt.Sprintf("%s/%s/%v", n["channel"], n["status"], n["recipient_user_id"] != nil)]++
	}
	want := map[string]int{"in_app/delivered/true": 3, "email/queued/true": 3, "slack/queued/false": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("delivery log %v, want %v", counts, want)
	}
	if d := expect(t, s, "GET", "/v1/account/notifications?channel=discord", tm.owner, "", 200, ""); len(d["items"].([]any)) != 0 {
		t.Fatalf("discord deliveries %v", d)
	}
	if q := expect(t, s, "GET", "/v1/account/notifications?status=queued&limit=3", tm.admin, "", 200, ""); len(q["items"].([]any)) != 3 || q["next_cursor"] == nil {
		t.Fatalf("queued page %v", q)
	}

	// The other account sees none of it.
	if in := expect(t, s, "GET", "/v1/account/inbox", tm.otherOwner, "", 200, ""); len(in["items"].([]any)) != 0 {
		t.Fatalf("other inbox %v", in)
	}
	if l := expect(t, s, "GET", "/v1/account/notifications", tm.otherOwner, "", 200, ""); len(l["items"].([]any)) != 0 {
		t.Fatalf("other log %v", l)
	}
}

// Seed §2 rule 1: no read returns the webhook URL. Every response of every
// alerting route, after connecting and firing, is searched for it.
func TestWebhookURLIsNeverReturnedByAnyRead(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	var bodies []string
	grab := func(method, path, token, body string, status int) map[string]any {
		t.Helper()
		rec, m := do(t, s, method, path, body, "Authorization", "Bearer "+token)
		if rec.Code != status {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
		bodies = append(bodies, rec.Body.String())
		return m
	}
	grab("PUT", "/v1/account/channels/slack/webhook", tm.owner, `{"url":`+jsonString(apiSlackURL)+`}`, 200)
	grab("PUT", "/v1/account/channels/discord/webhook", tm.owner, `{"url":"https://discord.com/api/webhooks/123456789012345678/SeCrEtToKeN_abcdefghij-0123456789?thread_id=42"}`, 200)
	rule := grab("POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, ruleAllChans, 201)
	id := rule["id"].(string)
	testdb.Events(t, cdb, tm.account, tm.mcp, "", time.Now().Add(-time.Minute), 4, 4)
	grab("POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200)
	for _, token := range []string{tm.owner, tm.member} {
		grab("GET", "/v1/account/channels", token, "", 200)
		grab("PUT", "/v1/account/channels", token, `{"email":true}`, 200)
		grab("GET", "/v1/mcps/"+tm.mcp+"/rules", token, "", 200)
		grab("GET", "/v1/rules/"+id, token, "", 200)
		grab("GET", "/v1/account/inbox", token, "", 200)
	}
	grab("GET", "/v1/account/notifications", tm.owner, "", 200)
	grab("PATCH", "/v1/rules/"+id, tm.owner, `{"name":"renamed"}`, 200)
	for _, b := range bodies {
		for _, secret := range []string{apiSlackSecret, "SeCrEtToKeN", "https://", "thread_id"} {
			if strings.Contains(b, secret) {
				t.Fatalf("a response carries %q: %s", secret, b)
			}
		}
	}
	chans := grab("GET", "/v1/account/channels", tm.member, "", 200)["channels"].([]any)
	if h := chans[3].(map[string]any)["webhook_hint"]; h != "discord.com/api/webhooks/123456789012345678/"+alerting.WebhookMask {
		t.Fatalf("discord hint %v", h)
	}
}

func TestChannelRoutes(t *testing.T) {
	t.Parallel()
	s, _ := alertingServer(t)
	tm := newAPITeam(t, s)

	g := expect(t, s, "GET", "/v1/account/channels", tm.member, "", 200, "")
	if keysOf(g) != "channels,preferences" || fmt.Sprint(g["preferences"]) != "map[email:true in_app:true]" {
		t.Fatalf("channels %v", g)
	}
	var ids []string
	for _, c := range g["channels"].([]any) {
		c := c.(map[string]any)
		ids = append(ids, c["id"].(string))
		if keysOf(c) != "connect_fields,connected,delivers,description,health,id,label,scope,webhook_hint" || c["delivers"] != (c["id"] == "in_app") ||
			(c["health"] == nil) != (c["scope"] == "personal") {
			t.Fatalf("channel %v", c)
		}
	}
	if strings.Join(ids, ",") != strings.Join(alerting.ChannelIDs(), ",") || !strings.HasPrefix(strings.Join(ids, ","), "in_app,email,slack,discord") {
		t.Fatalf("channels %v", ids)
	}
	p := expect(t, s, "PUT", "/v1/account/channels", tm.member, `{"email":false}`, 200, "")
	if fmt.Sprint(p["preferences"]) != "map[email:false in_app:true]" || len(p["channels"].([]any)) != len(alerting.ChannelIDs()) {
		t.Fatalf("merge %v", p)
	}
	p = expect(t, s, "PUT", "/v1/account/channels", tm.member, `{}`, 200, "")
	if fmt.Sprint(p["preferences"]) != "map[email:false in_app:true]" {
		t.Fatalf("empty merge %v", p)
	}
	if o := expect(t, s, "GET", "/v1/account/channels", tm.owner, "", 200, ""); fmt.Sprint(o["preferences"]) != "map[email:true in_app:true]" {
		t.Fatalf("another person's preferences: %v", o)
	}

	slackBody := `{"url":` + jsonString(apiSlackURL) + `}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
		code, location                  string
	}{
		{"team-chat key", "PUT", "/v1/account/channels", tm.member, `{"slack":true}`, 422, "invalid", "body.slack"},
		{"team-chat key beside a switch", "PUT", "/v1/account/channels", tm.member, `{"email":true,"discord":false}`, 422, "invalid", "body.discord"},
		{"null body", "PUT", "/v1/account/channels", tm.member, `null`, 400, "bad_request", ""},
		{"unknown key", "PUT", "/v1/account/channels", tm.member, `{"sms":true}`, 422, "invalid", "body.sms"},
		{"null switch", "PUT", "/v1/account/channels", tm.member, `{"email":null}`, 422, "invalid", "body.email"},
		{"string switch", "PUT", "/v1/account/channels", tm.member, `{"email":"no"}`, 422, "invalid", "body.email"},
		{"not an object", "PUT", "/v1/account/channels", tm.member, `[true]`, 400, "bad_request", ""},
		{"malformed", "PUT", "/v1/account/channels", tm.member, `{"email":`, 400, "bad_request", ""},
		{"no credential", "GET", "/v1/account/channels", "", "", 401, "unauthenticated", ""},
		{"member connects", "PUT", "/v1/account/channels/slack/webhook", tm.member, slackBody, 403, "forbidden", ""},
		{"member disconnects", "DELETE", "/v1/account/channels/slack/webhook", tm.member, "", 403, "forbidden", ""},
		{"foreign host", "PUT", "/v1/account/channels/slack/webhook", tm.admin, `{"url":"https://hooks.slack.com.evil.example/services/T0ABC/B0DEF/abcdefghijkl"}`, 422, "webhook_host_not_allowed", "body.url"},
		{"metadata address", "PUT", "/v1/account/channels/discord/webhook", tm.admin, `{"url":"http://169.254.169.254/latest/meta-data/"}`, 422, "webhook_host_not_allowed", "body.url"},
		{"slack page", "PUT", "/v1/account/channels/slack/webhook", tm.admin, `{"url":"https://app.slack.com/client/T0ABC/C0DEF"}`, 422, "webhook_host_not_allowed", "body.url"},
		{"slack URL on discord", "PUT", "/v1/account/channels/discord/webhook", tm.admin, slackBody, 422, "webhook_host_not_allowed", "body.url"},
		{"personal channel", "PUT", "/v1/account/channels/email/webhook", tm.admin, slackBody, 422, "invalid", "path.channel"},
		{"unknown channel", "PUT", "/v1/account/channels/sms/webhook", tm.admin, slackBody, 404, "not_found", "path.channel"},
		{"unknown channel delete", "DELETE", "/v1/account/channels/sms/webhook", tm.admin, "", 404, "not_found", "path.channel"},
		{"no url", "PUT", "/v1/account/channels/slack/webhook", tm.admin, `{}`, 422, "invalid", "body.url"},
		{"extra field", "PUT", "/v1/account/channels/slack/webhook", tm.admin, `{"url":` + jsonString(apiSlackURL) + `,"name":"x"}`, 422, "invalid", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := expect(t, s, c.method, c.path, c.token, c.body, c.status, c.code)
			if c.location != "" {
				errs, _ := m["errors"].([]any)
				if len(errs) == 0 || errs[0].(map[string]any)["location"] != c.location {
					t.Fatalf("location: %v", m)
				}
			}
		})
	}
	if m := expect(t, s, "PUT", "/v1/account/channels", tm.member, `{"slack":true}`, 422, "invalid"); !strings.Contains(m["detail"].(string), "PUT /v1/account/channels/slack/connection") {
		t.Fatalf("a team-chat key should point at the connection route: %v", m)
	}
	rec, m := do(t, s, "PUT", "/v1/account/channels", "email=false", "Authorization", "Bearer "+tm.member, "Content-Type", "text/plain")
	if rec.Code != 415 || m["code"] != "unsupported_media_type" {
		t.Fatalf("text/plain: %d %v", rec.Code, m)
	}

	expect(t, s, "PUT", "/v1/account/channels/slack/webhook", tm.owner, slackBody, 200, "")
	if c := expect(t, s, "GET", "/v1/account/channels", tm.member, "", 200, "")["channels"].([]any)[2].(map[string]any); c["connected"] != true {
		t.Fatalf("slack after connecting: %v", c)
	}
	expect(t, s, "DELETE", "/v1/account/channels/slack/webhook", tm.admin, "", 204, "")
	expect(t, s, "DELETE", "/v1/account/channels/slack/webhook", tm.admin, "", 204, "")
	if c := expect(t, s, "GET", "/v1/account/channels", tm.member, "", 200, "")["channels"].([]any)[2].(map[string]any); c["connected"] != false || c["webhook_hint"] != nil {
		t.Fatalf("slack after disconnecting: %v", c)
	}
	if o := expect(t, s, "GET", "/v1/account/channels", tm.otherOwner, "", 200, "")["channels"].([]any)[2].(map[string]any); o["connected"] != false {
		t.Fatalf("another account sees the connection: %v", o)
	}
}

func TestRuleRoutes(t *testing.T) {
	t.Parallel()
	s, _ := alertingServer(t)
	tm := newAPITeam(t, s)
	rules := "/v1/mcps/" + tm.mcp + "/rules"
	if l := expect(t, s, "GET", rules, tm.member, "", 200, ""); fmt.Sprint(l["items"]) != "[]" {
		t.Fatalf("no rules yet: %v", l)
	}
	r := expect(t, s, "POST", rules, tm.owner, `{"name":"Slow search","metric":"p95_ms","tool":"search","comparator":">=","threshold":800,"window_minutes":15,"channels":["discord"],"enabled":false}`, 201, "")
	if r["tool"] != "search" || r["enabled"] != false || r["threshold"] != 800.0 || fmt.Sprint(r["channels"]) != "[discord]" {
		t.Fatalf("created %v", r)
	}
	id := r["id"].(string)
	expect(t, s, "POST", rules, tm.admin, `{"name":"Nulls","metric":"calls","tool":null,"comparator":"<","threshold":1,"window_minutes":1440,"channels":["in_app"]}`, 201, "")
	if l := expect(t, s, "GET", rules, tm.member, "", 200, "")["items"].([]any); len(l) != 2 || l[0].(map[string]any)["id"] != id {
		t.Fatalf("list %v", l)
	}

	p := expect(t, s, "PATCH", "/v1/rules/"+id, tm.admin, `{"tool":null,"enabled":true}`, 200, "")
	if p["tool"] != nil || p["enabled"] != true || p["name"] != "Slow search" || p["threshold"] != 800.0 {
		t.Fatalf("patch %v", p)
	}
	p = expect(t, s, "PATCH", "/v1/rules/"+id, tm.admin, `{"channels":["in_app","email"],"name":"Slow"}`, 200, "")
	if p["tool"] != nil || fmt.Sprint(p["channels"]) != "[in_app email]" || p["name"] != "Slow" {
		t.Fatalf("patch %v", p)
	}

	valid := `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]}`
	bad := []struct {
		name, body, location string
	}{
		{"unknown metric", `{"name":"x","metric":"latency","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]}`, "body.metric"},
		{"unknown comparator", `{"name":"x","metric":"errors","comparator":"==","threshold":1,"window_minutes":5,"channels":["in_app"]}`, "body.comparator"},
		{"window 0", `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":0,"channels":["in_app"]}`, "body.window_minutes"},
		{"window 1441", `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":1441,"channels":["in_app"]}`, "body.window_minutes"},
		{"no channels", `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":[]}`, "body.channels"},
		{"unknown channel", `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["sms"]}`, "body.channels[0]"},
		{"channel twice", `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["email","email"]}`, "body.channels[1]"},
		{"error rate above 1", `{"name":"x","metric":"error_rate","comparator":">","threshold":5,"window_minutes":5,"channels":["in_app"]}`, "body.threshold"},
		{"negative threshold", `{"name":"x","metric":"errors","comparator":">","threshold":-1,"window_minutes":5,"channels":["in_app"]}`, "body.threshold"},
		{"blank name", `{"name":"  ","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]}`, "body.name"},
		{"missing threshold", `{"name":"x","metric":"errors","comparator":">","window_minutes":5,"channels":["in_app"]}`, ""},
		{"unknown field", `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"],"severity":"high"}`, ""},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			m := expect(t, s, "POST", rules, tm.owner, b.body, 422, "invalid")
			if b.location != "" {
				errs, _ := m["errors"].([]any)
				if len(errs) == 0 || errs[0].(map[string]any)["location"] != b.location {
					t.Fatalf("location: %v", m)
				}
			}
		})
	}
	expect(t, s, "POST", rules, tm.owner, `{"name":`, 400, "bad_request")
	expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"metric":"error_rate"}`, 422, "invalid") // threshold 800 kept
	expect(t, s, "PATCH", "/v1/rules/"+id, tm.owner, `{"channels":[]}`, 422, "invalid")

	// Roles and tenants.
	expect(t, s, "POST", rules, tm.member, valid, 403, "forbidden")
	expect(t, s, "PATCH", "/v1/rules/"+id, tm.member, `{"name":"m"}`, 403, "forbidden")
	expect(t, s, "DELETE", "/v1/rules/"+id, tm.member, "", 403, "forbidden")
	expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.member, "", 403, "forbidden")
	expect(t, s, "POST", "/v1/mcps/"+tm.otherMCP+"/rules", tm.owner, valid, 404, "not_found")
	expect(t, s, "GET", "/v1/mcps/"+tm.otherMCP+"/rules", tm.owner, "", 404, "not_found")
	expect(t, s, "GET", "/v1/mcps/mcp_nope/rules", tm.owner, "", 404, "not_found")
	expect(t, s, "GET", "/v1/mcps/"+url.PathEscape("a/b")+"/rules", tm.owner, "", 404, "not_found")
	for _, m := range [][2]string{{"GET", ""}, {"PATCH", `{"name":"mine"}`}, {"DELETE", ""}} {
		expect(t, s, m[0], "/v1/rules/"+id, tm.otherOwner, m[1], 404, "not_found")
	}
	expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.otherOwner, "", 404, "not_found")
	expect(t, s, "GET", "/v1/rules/rul_unknown", tm.owner, "", 404, "not_found")
	expect(t, s, "GET", "/v1/rules/%00", tm.owner, "", 404, "not_found")

	expect(t, s, "DELETE", "/v1/rules/"+id, tm.admin, "", 204, "")
	expect(t, s, "GET", "/v1/rules/"+id, tm.admin, "", 404, "not_found")
	expect(t, s, "DELETE", "/v1/rules/"+id, tm.admin, "", 404, "not_found")

	// Deleting the MCP removes its rules.
	other := expect(t, s, "POST", rules, tm.owner, valid, 201, "")["id"].(string)
	expect(t, s, "DELETE", "/v1/mcps/"+tm.mcp, tm.owner, "", 204, "")
	expect(t, s, "GET", "/v1/rules/"+other, tm.owner, "", 404, "not_found")
}

func TestInboxRoutes(t *testing.T) {
	t.Parallel()
	s, cdb := alertingServer(t)
	tm := newAPITeam(t, s)
	// Three firings of three rules: three inbox items each.
	testdb.Events(t, cdb, tm.account, tm.mcp, "", time.Now().Add(-time.Minute), 5, 5)
	for i := 0; i < 3; i++ {
		id := expect(t, s, "POST", "/v1/mcps/"+tm.mcp+"/rules", tm.owner, `{"name":"r`+fmt.Sprint(i)+`","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]}`, 201, "")["id"].(string)
		expect(t, s, "POST", "/v1/rules/"+id+"/evaluate", tm.owner, "", 200, "")
	}
	var ids []string
	cursor := ""
	for page := 0; page < 3; page++ {
		path := "/v1/account/inbox?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		in := expect(t, s, "GET", path, tm.member, "", 200, "")
		items := in["items"].([]any)
		if len(items) != 1 || in["unread_count"] != 3.0 {
			t.Fatalf("page %d: %v", page, in)
		}
		ids = append(ids, items[0].(map[string]any)["id"].(string))
		if page == 2 {
			if in["next_cursor"] != nil {
				t.Fatalf("last page has a cursor: %v", in)
			}
			break
		}
		cursor = in["next_cursor"].(string)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("pages repeat: %v", ids)
	}
	mine := expect(t, s, "GET", "/v1/account/inbox", tm.owner, "", 200, "")["items"].([]any)[0].(map[string]any)["id"].(string)

	r := expect(t, s, "POST", "/v1/account/inbox/read", tm.member, `{"ids":[`+jsonString(ids[0])+`,`+jsonString(mine)+`,"dlv_unknown","\u0000bad"]}`, 200, "")
	if keysOf(r) != "updated" || r["updated"] != 1.0 {
		t.Fatalf("read %v", r)
	}
	if r := expect(t, s, "POST", "/v1/account/inbox/read", tm.member, `{"ids":[`+jsonString(ids[0])+`]}`, 200, ""); r["updated"] != 0.0 {
		t.Fatalf("read again %v", r)
	}
	un := expect(t, s, "GET", "/v1/account/inbox?unread=true", tm.member, "", 200, "")
	if len(un["items"].([]any)) != 2 || un["unread_count"] != 2.0 {
		t.Fatalf("unread %v", un)
	}
	all := expect(t, s, "GET", "/v1/account/inbox", tm.member, "", 200, "")["items"].([]any)
	if first := all[0].(map[string]any); first["id"] != ids[0] || first["read"] != true || !isUTCTime(first["read_at"]) {
		t.Fatalf("read item %v", first)
	}
	if o := expect(t, s, "GET", "/v1/account/inbox", tm.owner, "", 200, ""); o["unread_count"] != 3.0 {
		t.Fatalf("the owner's items were marked: %v", o)
	}
	if r := expect(t, s, "POST", "/v1/account/inbox/read", tm.member, `{"all":true}`, 200, ""); r["updated"] != 2.0 {
		t.Fatalf("read all %v", r)
	}
	if r := expect(t, s, "POST", "/v1/account/inbox/read", tm.member, `{"ids":[]}`, 200, ""); r["updated"] != 0.0 {
		t.Fatalf("read none %v", r)
	}

	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/account/inbox/read", `{"ids":["a"],"all":true}`, 422, "invalid"},
		{"POST", "/v1/account/inbox/read", `{}`, 422, "invalid"},
		{"POST", "/v1/account/inbox/read", `{"all":false}`, 422, "invalid"},
		{"POST", "/v1/account/inbox/read", `{"ids":"a"}`, 422, "invalid"},
		{"POST", "/v1/account/inbox/read", `{"ids":[`, 400, "bad_request"},
		{"GET", "/v1/account/inbox?cursor=garbage", "", 400, "bad_request"},
		{"GET", "/v1/account/inbox?limit=0", "", 422, "invalid"},
		{"GET", "/v1/account/inbox?limit=201", "", 422, "invalid"},
		// A parameter that does not parse is a malformed request (400), a
		// value that parses but breaks a rule is 422.
		{"GET", "/v1/account/inbox?unread=maybe", "", 400, "bad_request"},
		{"GET", "/v1/account/inbox?limit=abc", "", 400, "bad_request"},
		{"GET", "/v1/account/inbox?limit=1.5", "", 400, "bad_request"},
		{"GET", "/v1/account/notifications", "", 403, "forbidden"},
	} {
		expect(t, s, c.method, c.path, tm.member, c.body, c.status, c.code)
	}
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/account/notifications?channel=sms", 422, "invalid"},
		{"/v1/account/notifications?status=bounced", 422, "invalid"},
		{"/v1/account/notifications?cursor=%7B%7D", 400, "bad_request"},
		{"/v1/account/notifications?limit=1000", 422, "invalid"},
	} {
		expect(t, s, "GET", c.path, tm.owner, "", c.status, c.code)
	}
}
