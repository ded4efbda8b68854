package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/chatstub"
	"github.com/mcpscope/telemetry/postgres"
)

const pdKey = "R0UT1NGKEYabcdefghijklmnopqrstuv"

// pdEvent is an Events API v2 event as PagerDuty documents it.
type pdEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     *struct {
		Summary       string         `json:"summary"`
		Source        string         `json:"source"`
		Severity      string         `json:"severity"`
		Timestamp     string         `json:"timestamp"`
		CustomDetails map[string]any `json:"custom_details"`
	} `json:"payload"`
	Links []struct {
		Href string `json:"href"`
		Text string `json:"text"`
	} `json:"links"`
}

// checkPDSchema checks an event against the Events API v2 schema: the
// required fields, the enums, the lengths, and no field it does not know.
func checkPDSchema(t *testing.T, body []byte) pdEvent {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("event is not JSON: %s", body)
	}
	for k := range raw {
		switch k {
		case "routing_key", "event_action", "dedup_key", "payload", "images", "links", "client", "client_url":
		default:
			t.Errorf("unknown event field %q in %s", k, body)
		}
	}
	var ev pdEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.RoutingKey) != 32 || ev.DedupKey == "" || len(ev.DedupKey) > 255 {
		t.Errorf("routing_key/dedup_key: %s", body)
	}
	switch ev.EventAction {
	case "trigger":
		p := ev.Payload
		if p == nil || p.Summary == "" || len(p.Summary) > 1024 || p.Source == "" {
			t.Fatalf("trigger without summary or source: %s", body)
		}
		switch p.Severity {
		case "critical", "error", "warning", "info":
		default:
			t.Errorf("severity %q not in PagerDuty's enum", p.Severity)
		}
		if p.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, p.Timestamp); err != nil {
				t.Errorf("timestamp %q", p.Timestamp)
			}
		}
	case "resolve", "acknowledge":
		if ev.Payload != nil {
			t.Errorf("%s with a payload: %s", ev.EventAction, body)
		}
	default:
		t.Errorf("event_action %q", ev.EventAction)
	}
	return ev
}

func (e *deliveryEnv) pdEvents(t *testing.T) []pdEvent {
	t.Helper()
	var out []pdEvent
	for _, r := range e.chat.To("/v2/enqueue") {
		if r.Host != "events.pagerduty.com" {
			t.Fatalf("pagerduty request to %s", r.Host)
		}
		out = append(out, checkPDSchema(t, r.Body))
	}
	return out
}

// resolve applies a real resolve transition to a firing rule through
// the evaluation store and the evaluator's plan (the measurement, which
// needs data in ClickHouse, is the only part left out).
func (e *deliveryEnv) resolve(t *testing.T, ruleID string) {
	t.Helper()
	ctx := context.Background()
	var account string
	if err := e.m.PG.Pool.QueryRow(ctx, `SELECT account_id FROM rules WHERE id = $1`, ruleID).Scan(&account); err != nil {
		t.Fatal(err)
	}
	store := postgres.NewEvaluationStore(e.m.PG)
	r, err := store.EvalRule(ctx, account, ruleID)
	if err != nil {
		t.Fatal(err)
	}
	now, v := time.Now(), 3.0
	ok, _, err := store.Transition(ctx, r, alerting.StateChange{Next: alerting.StateOK, Value: &v, At: now},
		func(rule alerting.Rule, audience []alerting.Member, connected map[string]bool) []alerting.PlannedDelivery {
			return alerting.PlanTransition(rule, false, alerting.Reading{Value: v, HasValue: true}, now, audience, connected)
		})
	if err != nil || !ok {
		t.Fatalf("resolve: %v %v", ok, err)
	}
}

// TestPagerDuty: connected with a routing key (shown back only as a
// hint), a critical rule triggers one incident and its resolve (without
// notify_on_resolve) resolves the same dedup_key; a re-notification keeps
// the key; a second firing gets a new one; 400 fails at once with
// PagerDuty's message, 429 and 500 are retried; a test triggers and
// resolves; the delivery log filters by severity.
func TestPagerDuty(t *testing.T) {
	t.Parallel()
	e := newDeliveryEnv(t, false)
	e.a.must(422, "PUT", "/v1/account/channels/pagerduty/connection", e.token, map[string]any{"routing_key": "short"})
	e.a.must(422, "PUT", "/v1/account/channels/pagerduty/connection", e.token, map[string]any{"url": "https://events.pagerduty.com/"})
	e.a.must(422, "PUT", "/v1/account/channels/pagerduty/webhook", e.token, map[string]any{"url": "https://events.pagerduty.com/"})
	c := e.a.must(200, "PUT", "/v1/account/channels/pagerduty/connection", e.token, map[string]any{"routing_key": pdKey})
	if c["connected"] != true || strings.Contains(fmt.Sprint(c), pdKey) || !strings.HasSuffix(c["hint"].(string), "stuv") || c["signing_secret"] != nil {
		t.Fatalf("connect answer %v", c)
	}
	ch := e.channel(t, "pagerduty")
	if ch["connected"] != true || ch["scope"] != "team" || ch["delivers"] != true || fmt.Sprint(ch["connect_fields"]) != "[routing_key region]" ||
		strings.Contains(fmt.Sprint(ch), pdKey) {
		t.Fatalf("channel %v", ch)
	}

	rule := e.fireWith(t, map[string]any{"name": "Search down <users/all>", "channels": []string{"pagerduty", "in_app"}, "severity": "critical"})
	d := e.waitStatus(t, rule, "pagerduty", "sent", 10*time.Second)
	if d["severity"] != "critical" || num(d["attempts"]) != 1 {
		t.Errorf("delivery %v", d)
	}
	evs := e.pdEvents(t)
	if len(evs) != 1 || evs[0].EventAction != "trigger" || evs[0].RoutingKey != pdKey {
		t.Fatalf("events %+v", evs)
	}
	tr := evs[0]
	ruleLink := "https://telemetry.example.com/app/mcps/" + e.mcp + "/alerts/" + rule
	if tr.Payload.Severity != "critical" || !strings.Contains(tr.Payload.Summary, "[critical] Firing: Search down") ||
		tr.Payload.Source != "dlv server" || tr.Payload.CustomDetails["value"] != 0.0 || tr.Payload.CustomDetails["threshold"] != 1.0 ||
		len(tr.Links) == 0 || tr.Links[0].Href != ruleLink {
		t.Errorf("trigger %+v", tr)
	}

	// Re-notification: the same key (no second incident).
	if _, err := e.m.PG.Pool.Exec(context.Background(), `UPDATE rules SET renotify_minutes = 5, last_fired_at = last_fired_at - interval '6 minutes',
		last_notified_at = NULL WHERE id = $1`, rule); err != nil {
		t.Fatal(err)
	}
	// Moving last_fired_at moved the episode; the deliveries already made
	// keep theirs, so re-read the key the re-notification carries.
	if n, err := postgres.NewEvaluationStore(e.m.PG).Renotify(context.Background(), time.Now()); err != nil || n != 1 {
		t.Fatalf("renotify: %d %v", n, err)
	}
	eventually(t, 10*time.Second, func() error {
		if n := len(e.pdEvents(t)); n != 2 {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	renotified := e.pdEvents(t)[1]
	e.resolve(t, rule)
	eventually(t, 10*time.Second, func() error {
		if n := len(e.pdEvents(t)); n != 3 {
			return fmt.Errorf("%d events after the resolve", n)
		}
		return nil
	})
	res := e.pdEvents(t)[2]
	if renotified.EventAction != "trigger" || res.EventAction != "resolve" || res.DedupKey != renotified.DedupKey {
		t.Errorf("renotify %+v then resolve %+v: want one key", renotified, res)
	}

	// A second firing is a new episode: a new key, triggered then resolved.
	if ev := e.a.must(200, "POST", "/v1/rules/"+rule+"/evaluate", e.token, nil); ev["fired"] != true {
		t.Fatalf("fire again: %v", ev)
	}
	eventually(t, 10*time.Second, func() error {
		if n := len(e.pdEvents(t)); n != 4 {
			return fmt.Errorf("%d events after the second firing", n)
		}
		return nil
	})
	e.resolve(t, rule)
	eventually(t, 10*time.Second, func() error {
		if n := len(e.pdEvents(t)); n != 5 {
			return fmt.Errorf("%d events after the second resolve", n)
		}
		return nil
	})
	evs = e.pdEvents(t)
	if evs[3].EventAction != "trigger" || evs[4].EventAction != "resolve" || evs[3].DedupKey != evs[4].DedupKey || evs[3].DedupKey == res.DedupKey {
		t.Errorf("second episode: %+v / %+v (first key %s)", evs[3], evs[4], res.DedupKey)
	}

	// The delivery log filters by severity.
	page := e.a.must(200, "GET", "/v1/account/notifications?severity=critical&channel=pagerduty", e.token, nil)["items"].([]any)
	if len(page) != 5 {
		t.Errorf("critical pagerduty deliveries: %d, want 5", len(page))
	}
	if n := len(e.a.must(200, "GET", "/v1/account/notifications?severity=info", e.token, nil)["items"].([]any)); n != 0 {
		t.Errorf("info deliveries: %d", n)
	}
	e.a.must(422, "GET", "/v1/account/notifications?severity=fatal", e.token, nil)

	// Failures: 500 then 429 are retried until sent; 400 fails at once.
	e.chat.SetRespond(func(r chatstub.Request, n int) chatstub.Answer {
		switch n {
		case 6:
			return chatstub.Answer{Status: 500}
		case 7:
			return chatstub.Answer{Status: 429}
		}
		return chatstub.Answer{}
	})
	retried := e.fireWith(t, map[string]any{"name": "retried", "channels": []string{"pagerduty"}, "severity": "warning"})
	if d := e.waitStatus(t, retried, "pagerduty", "sent", 15*time.Second); num(d["attempts"]) != 3 || d["severity"] != "warning" {
		t.Errorf("retried delivery %v", d)
	}
	e.chat.SetRespond(func(r chatstub.Request, n int) chatstub.Answer {
		return chatstub.Answer{Status: http.StatusBadRequest, Header: http.Header{"Content-Type": {"application/json"}},
			Body: `{"status":"invalid event","message":"Event object is invalid","errors":["Length of 'summary' is incorrect"]}`}
	})
	bad := e.fireWith(t, map[string]any{"name": "refused", "channels": []string{"pagerduty"}})
	d = e.waitStatus(t, bad, "pagerduty", "failed", 10*time.Second)
	if num(d["attempts"]) != 1 || !strings.Contains(fmt.Sprint(d["last_error"]), "http_400: event object is invalid") {
		t.Errorf("400 delivery %v", d)
	}
	if h := e.channel(t, "pagerduty")["health"].(map[string]any); h["broken"] != false {
		t.Errorf("a refused event broke the channel: %v", h)
	}
	// An unknown routing key is the destination gone: broken, admins told.
	e.chat.SetRespond(func(r chatstub.Request, n int) chatstub.Answer {
		return chatstub.Answer{Status: http.StatusBadRequest, Body: `{"status":"invalid event","message":"Event object is invalid","errors":["'routing_key' is invalid"]}`}
	})
	gone := e.fireWith(t, map[string]any{"name": "gone", "channels": []string{"pagerduty"}})
	e.waitStatus(t, gone, "pagerduty", "failed", 10*time.Second)
	eventually(t, 5*time.Second, func() error {
		if h := e.channel(t, "pagerduty")["health"].(map[string]any); h["broken"] != true {
			return fmt.Errorf("health %v", h)
		}
		return nil
	})
	e.chat.SetRespond(nil)

	// The test button triggers and resolves one key.
	before := len(e.pdEvents(t))
	if r := e.a.must(200, "POST", "/v1/account/channels/pagerduty/test", e.token, nil); r["status"] != "sent" {
		t.Fatalf("test: %v", r)
	}
	evs = e.pdEvents(t)[before:]
	if len(evs) != 2 || evs[0].EventAction != "trigger" || evs[0].Payload.Severity != "info" || evs[1].EventAction != "resolve" || evs[0].DedupKey != evs[1].DedupKey {
		t.Errorf("test events %+v", evs)
	}
	if h := e.channel(t, "pagerduty")["health"].(map[string]any); h["broken"] != false {
		t.Errorf("a successful test keeps the channel broken: %v", h)
	}
	// The key is in no read.
	for _, path := range []string{"/v1/account/channels", "/v1/account/notifications?limit=200"} {
		_, body := e.a.do("GET", path, e.token, nil)
		if raw, _ := json.Marshal(body); strings.Contains(string(raw), pdKey) {
			t.Errorf("%s shows the routing key", path)
		}
	}
	// An EU account: region eu sends to events.eu.pagerduty.com; a
	// region that is neither us nor eu is refused on the field.
	if r := e.a.must(422, "PUT", "/v1/account/channels/pagerduty/connection", e.token, map[string]any{"routing_key": pdKey, "region": "ap"}); !strings.Contains(fmt.Sprint(r), "body.region") {
		t.Errorf("region ap: %v", r)
	}
	if c := e.a.must(200, "PUT", "/v1/account/channels/pagerduty/connection", e.token, map[string]any{"routing_key": pdKey, "region": "eu"}); !strings.HasSuffix(fmt.Sprint(c["hint"]), "stuv (EU)") {
		t.Errorf("EU connect answer %v", c)
	}
	before = len(e.chat.To("/v2/enqueue"))
	if r := e.a.must(200, "POST", "/v1/account/channels/pagerduty/test", e.token, nil); r["status"] != "sent" {
		t.Fatalf("EU test: %v", r)
	}
	eu := e.chat.To("/v2/enqueue")[before:]
	if len(eu) != 2 {
		t.Fatalf("EU test sent %d events", len(eu))
	}
	for i, r := range eu {
		ev := checkPDSchema(t, r.Body)
		if r.Host != "events.eu.pagerduty.com" || ev.RoutingKey != pdKey || ev.EventAction != []string{"trigger", "resolve"}[i] {
			t.Errorf("EU event %d to %s: %+v", i, r.Host, ev)
		}
	}
	e.a.must(204, "DELETE", "/v1/account/channels/pagerduty/connection", e.token, nil)
	if e.channel(t, "pagerduty")["connected"] != false {
		t.Error("still connected after DELETE")
	}
}
