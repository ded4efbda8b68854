package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/chatstub"
)

const (
	teamsHook = "https://prod-01.westus.logic.azure.com:443/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=SiGnAtUrE0123456789abcdefghijklmnopqrstu"
	gchatHook = "https://chat.googleapis.com/v1/spaces/AAAAbcdEFgh/messages?key=AIzaKeY0123456789&token=ToKeN0123456789abcdef%3D"
)

// adaptiveMessage is a Teams Workflows message with Adaptive Cards, as the
// card schema (version 1.4) requires it: $schema, type, version, body.
type adaptiveMessage struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string `json:"contentType"`
		Content     struct {
			Schema  string `json:"$schema"`
			Type    string `json:"type"`
			Version string `json:"version"`
			Body    []struct {
				Type  string `json:"type"`
				Style string `json:"style"`
				Items []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"items"`
				Text  string `json:"text"`
				Facts []struct {
					Title string `json:"title"`
					Value string `json:"value"`
				} `json:"facts"`
			} `json:"body"`
			Actions []struct {
				Type  string `json:"type"`
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"actions"`
		} `json:"content"`
	} `json:"attachments"`
}

func checkAdaptive(t *testing.T, body []byte) adaptiveMessage {
	t.Helper()
	var m adaptiveMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("teams body: %s", body)
	}
	if m.Type != "message" || len(m.Attachments) == 0 {
		t.Fatalf("teams message: %s", body)
	}
	for _, a := range m.Attachments {
		c := a.Content
		if a.ContentType != "application/vnd.microsoft.card.adaptive" || c.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" ||
			c.Type != "AdaptiveCard" || c.Version != "1.4" || len(c.Body) == 0 {
			t.Errorf("adaptive card: %s", body)
		}
		for _, el := range c.Body {
			switch el.Type {
			case "Container", "TextBlock", "FactSet":
			default:
				t.Errorf("element type %q", el.Type)
			}
			if el.Type == "TextBlock" && el.Text == "" {
				t.Errorf("TextBlock without text (required)")
			}
		}
		for _, ac := range c.Actions {
			if ac.Type != "Action.OpenUrl" || ac.URL == "" || ac.Title == "" {
				t.Errorf("action %+v", ac)
			}
		}
	}
	return m
}

// TestTeamsAndGoogleChat: Teams is connected with a Workflows URL only
// (webhook.office.com refused as retired) and receives an Adaptive Card
// coloured by state and severity with facts and the rule's link; Google
// Chat gets a card message whose text carries no user input and whose
// card escapes it, so <users/all> mentions nobody; failures retry or
// break the channel.
func TestTeamsAndGoogleChat(t *testing.T) {
	t.Parallel()
	e := newDeliveryEnv(t, false)
	m := e.a.must(422, "PUT", "/v1/account/channels/teams/connection", e.token,
		map[string]any{"url": "https://contoso.webhook.office.com/webhookb2/abc@def/IncomingWebhook/123/456"})
	if !strings.Contains(fmt.Sprint(m["detail"]), "retired") {
		t.Errorf("office connector refusal: %v", m)
	}
	for _, u := range []string{"https://evil.logic.azure.com.example.org/workflows/x/triggers/manual/paths/invoke?sig=x",
		"https://logic.azure.com/workflows/x/triggers/manual/paths/invoke?sig=x", strings.Replace(teamsHook, "&sig=", "&nosig=", 1)} {
		e.a.must(422, "PUT", "/v1/account/channels/teams/connection", e.token, map[string]any{"url": u})
	}
	for _, u := range []string{"https://chat.googleapis.com/v1/spaces/AAA/messages?key=k", "https://chat.google.com/room/AAA",
		"https://chat.googleapis.com/v1/spaces/AAA/members?key=k&token=t"} {
		e.a.must(422, "PUT", "/v1/account/channels/google_chat/connection", e.token, map[string]any{"url": u})
	}
	e.a.must(200, "PUT", "/v1/account/channels/teams/webhook", e.token, map[string]any{"url": teamsHook})
	g := e.a.must(200, "PUT", "/v1/account/channels/google_chat/connection", e.token, map[string]any{"url": gchatHook})
	if strings.Contains(fmt.Sprint(g), "ToKeN") || strings.Contains(fmt.Sprint(e.channel(t, "teams")), "SiGnAtUrE") {
		t.Fatalf("a hint shows a secret: %v", g)
	}

	name := "Search <users/all> [click](https://evil.example) *now*"
	rule := e.fireWith(t, map[string]any{"name": name, "channels": []string{"teams", "google_chat"}, "severity": "critical", "notify_on_resolve": true})
	e.waitStatus(t, rule, "teams", "sent", 10*time.Second)
	e.waitStatus(t, rule, "google_chat", "sent", 10*time.Second)
	ruleLink := "https://telemetry.example.com/app/mcps/" + e.mcp + "/alerts/" + rule

	tr := e.chat.To("/workflows/")
	if len(tr) != 1 || tr[0].Host != "prod-01.westus.logic.azure.com" || !strings.Contains(tr[0].Query, "sig=SiGnAtUrE") {
		t.Fatalf("teams requests %+v", tr)
	}
	card := checkAdaptive(t, tr[0].Body).Attachments[0].Content
	if card.Body[0].Type != "Container" || card.Body[0].Style != "attention" || len(card.Actions) == 0 || card.Actions[0].URL != ruleLink {
		t.Errorf("teams card: %s", tr[0].Body)
	}
	facts := map[string]string{}
	for _, f := range card.Body[2].Facts {
		facts[f.Title] = f.Value
	}
	if facts["Severity"] != "critical" || facts["State"] != "firing" || !strings.Contains(facts["Rule"], `\[click\]\(https`) {
		t.Errorf("teams facts %v", facts)
	}
	if strings.Contains(string(tr[0].Body), "[click](") {
		t.Errorf("teams card not escaped: %s", tr[0].Body)
	}

	gr := e.chat.To("/v1/spaces/AAAAbcdEFgh/messages")
	if len(gr) != 1 || gr[0].Host != "chat.googleapis.com" || !strings.Contains(gr[0].Query, "token=ToKeN") {
		t.Fatalf("google chat requests %+v", gr)
	}
	var gm struct {
		Text    string `json:"text"`
		CardsV2 []struct {
			CardID string `json:"cardId"`
			Card   struct {
				Header struct {
					Title string `json:"title"`
				} `json:"header"`
				Sections []struct {
					Widgets []map[string]any `json:"widgets"`
				} `json:"sections"`
			} `json:"card"`
		} `json:"cardsV2"`
	}
	if err := json.Unmarshal(gr[0].Body, &gm); err != nil {
		t.Fatal(err)
	}
	if len(gm.CardsV2) != 1 || gm.CardsV2[0].CardID == "" || gm.CardsV2[0].Card.Header.Title == "" || len(gm.CardsV2[0].Card.Sections) != 1 ||
		!strings.Contains(gm.Text, "critical") {
		t.Errorf("google chat message: %s", gr[0].Body)
	}
	if strings.Contains(gm.Text, "users/") || strings.Contains(string(gr[0].Body), `<users/all>`) || !strings.Contains(string(gr[0].Body), `\u0026lt;users/all\u0026gt;`) {
		t.Errorf("google chat mention not escaped: %s", gr[0].Body)
	}

	// The resolve: green.
	e.resolve(t, rule)
	eventually(t, 10*time.Second, func() error {
		if n := len(e.chat.To("/workflows/")); n != 2 {
			return fmt.Errorf("%d teams requests", n)
		}
		return nil
	})
	if c := checkAdaptive(t, e.chat.To("/workflows/")[1].Body).Attachments[0].Content; c.Body[0].Style != "good" {
		t.Errorf("resolved card style %q", c.Body[0].Style)
	}

	// Google Chat's 429 is retried; Teams' 404 (workflow deleted) breaks it.
	e.chat.SetRespond(func(r chatstub.Request, n int) chatstub.Answer {
		switch {
		case r.Host == "chat.googleapis.com" && n == 3:
			return chatstub.Answer{Status: http.StatusTooManyRequests, Body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`}
		case strings.HasSuffix(r.Host, ".logic.azure.com"):
			return chatstub.Answer{Status: http.StatusNotFound}
		}
		return chatstub.Answer{}
	})
	rule2 := e.fireWith(t, map[string]any{"name": "second", "channels": []string{"teams", "google_chat"}, "severity": "warning"})
	if d := e.waitStatus(t, rule2, "google_chat", "sent", 15*time.Second); num(d["attempts"]) != 2 {
		t.Errorf("google chat after a 429: %v", d)
	}
	e.waitStatus(t, rule2, "teams", "failed", 10*time.Second)
	if h := e.channel(t, "teams")["health"].(map[string]any); h["broken"] != true || h["last_error"] != "webhook_revoked" {
		t.Errorf("teams health %v", h)
	}
	e.chat.SetRespond(nil)
	for _, c := range []string{"teams", "google_chat"} {
		if r := e.a.must(200, "POST", "/v1/account/channels/"+c+"/test", e.token, nil); r["status"] != "sent" {
			t.Errorf("test %s: %v", c, r)
		}
	}
}
