package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// pigeon is a throwaway destination that exists only in this test binary:
// one registry line (below) makes it a channel everywhere.
var pigeon = struct {
	sync.Mutex
	sent []alerting.Envelope
}{}

var pigeonIntegration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: "carrier_pigeon", Label: "Carrier pigeon", Scope: alerting.ScopeTeam,
		Description: "Alerts are tied to a pigeon's leg.", SendingDescription: "Alerts fly to your loft."},
	Gate: alerting.GateChat,
	Connection: &alerting.ConnectionSpec{
		Fields: []alerting.ConnectionField{{Name: "loft", Doc: "The loft's name, loft-…"}},
		Open: func(_ context.Context, body map[string]string, _ alerting.ConnectEnv) (alerting.Sealed, error) {
			if !strings.HasPrefix(body["loft"], "loft-") {
				return alerting.Sealed{}, alerting.FieldInvalid("body.loft", "A loft is named loft-….")
			}
			return alerting.Sealed{Secret: body["loft"], Hint: "loft-" + alerting.WebhookMask}, nil
		},
	},
	New: func(alerting.NotifierDeps) (alerting.Notifier, error) {
		return alerting.NotifierFunc(func(_ context.Context, e alerting.Envelope) (bool, error) {
			pigeon.Lock()
			defer pigeon.Unlock()
			pigeon.sent = append(pigeon.sent, e)
			return false, nil
		}), nil
	},
}

// The one registry line.
func init() { alerting.Register(pigeonIntegration) }

// TestRegistryAddsADestination: the throwaway destination registered by
// one line is in the catalogue, in /docs' channel enums, accepted by rule
// validation, connected with its own body, and sent by the outbox.
func TestRegistryAddsADestination(t *testing.T) {
	t.Parallel()
	e := newDeliveryEnv(t, false)
	ch := e.channel(t, "carrier_pigeon")
	if ch["scope"] != "team" || ch["label"] != "Carrier pigeon" || ch["delivers"] != true || fmt.Sprint(ch["connect_fields"]) != "[loft]" {
		t.Fatalf("catalogue entry %v", ch)
	}
	spec := e.a.must(200, "GET", "/openapi.json", "", nil)
	raw, _ := json.Marshal(spec)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Items struct {
						Enum []string `json:"enum"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Enum []string `json:"enum"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ruleEnum := doc.Components.Schemas["NewRuleRequest"].Properties["channels"].Items.Enum
	var logEnum []string
	for _, p := range doc.Paths["/v1/account/notifications"]["get"].Parameters {
		if p.Name == "channel" {
			logEnum = p.Schema.Enum
		}
	}
	for _, enum := range [][]string{ruleEnum, logEnum} {
		if !strings.Contains(strings.Join(enum, ","), "carrier_pigeon") || !strings.Contains(strings.Join(enum, ","), "pagerduty") {
			t.Errorf("/docs channel enum %v lacks the registered destinations", enum)
		}
	}
	if !strings.Contains(string(raw), "`carrier_pigeon` {loft}") {
		t.Error("/docs connect body does not list the pigeon's fields")
	}

	e.a.must(422, "POST", "/v1/mcps/"+e.mcp+"/rules", e.token, map[string]any{"name": "x", "metric": "calls", "comparator": "<",
		"threshold": 1, "window_minutes": 5, "channels": []string{"carrier_dove"}})
	e.a.must(422, "PUT", "/v1/account/channels/carrier_pigeon/connection", e.token, map[string]any{"loft": "barn"})
	e.a.must(422, "PUT", "/v1/account/channels/carrier_pigeon/connection", e.token, map[string]any{"url": "https://example.org"})
	if c := e.a.must(200, "PUT", "/v1/account/channels/carrier_pigeon/connection", e.token, map[string]any{"loft": "loft-7"}); c["hint"] != "loft-"+alerting.WebhookMask {
		t.Fatalf("connect %v", c)
	}
	rule := e.fireWith(t, map[string]any{"name": "by air", "channels": []string{"carrier_pigeon"}, "severity": "info"})
	e.waitStatus(t, rule, "carrier_pigeon", "sent", 10*time.Second)
	pigeon.Lock()
	defer pigeon.Unlock()
	if len(pigeon.sent) != 1 || pigeon.sent[0].To != "loft-7" || pigeon.sent[0].Messages[0].RuleID != rule || pigeon.sent[0].Messages[0].Severity != "info" {
		t.Errorf("the outbox sent %+v", pigeon.sent)
	}
}
