package discord

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpscope/telemetry/alerting"
)

func TestEscape(t *testing.T) {
	in := "@everyone [click](https://evil) **x** <@123> `y`"
	got := Escape(in)
	if !strings.Contains(got, `\<@`) {
		t.Errorf("Escape(%q) = %q: a user mention is not escaped", in, got)
	}
	for _, bad := range []string{"@everyone", "[click](", "**", "`y`"} {
		if strings.Contains(got, bad) {
			t.Errorf("Escape(%q) = %q keeps %q", in, got, bad)
		}
	}
}

func TestBuild(t *testing.T) {
	fire := alerting.Message{Kind: alerting.KindFiring, RuleName: "@here", Title: "Firing: @here", Body: "b", RuleURL: "https://t/r"}
	res := fire
	res.Kind = alerting.KindResolved
	p := Build(alerting.Envelope{Messages: []alerting.Message{fire, res}})
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"allowed_mentions":{"parse":[]}`) || strings.Contains(string(b), "@here") {
		t.Errorf("payload %s", b)
	}
	if len(p.Embeds) != 2 || p.Embeds[0].Color != ColorFiring || p.Embeds[1].Color != ColorResolved || p.Embeds[0].URL != "https://t/r" {
		t.Errorf("embeds %+v", p.Embeds)
	}
}

// Discord's limits: 10 embeds, 6000 characters over them, 4096 in a
// description, 256 in a title, 2000 in the content.
func TestBuildLimits(t *testing.T) {
	long := strings.Repeat("é", 9000)
	var e alerting.Envelope
	for i := 0; i < 25; i++ {
		e.Messages = append(e.Messages, alerting.Message{Kind: alerting.KindFiring, RuleName: long, MCPName: long, Title: long, Body: long, Summary: long})
	}
	p := Build(e)
	total := 0
	for _, em := range p.Embeds {
		if utf8.RuneCountInString(em.Title) > MaxTitle || utf8.RuneCountInString(em.Description) > MaxDescription {
			t.Errorf("embed over its limits")
		}
		for _, f := range em.Fields {
			if utf8.RuneCountInString(f.Value) > MaxFieldValue {
				t.Errorf("field over its limit")
			}
		}
		total += embedSize(em)
	}
	if len(p.Embeds) == 0 || len(p.Embeds) > MaxEmbeds || total > MaxEmbedTotal || utf8.RuneCountInString(p.Content) > MaxContent {
		t.Errorf("%d embeds, %d characters, content %q", len(p.Embeds), total, p.Content)
	}
	if !strings.Contains(p.Content, "more alerts are not shown") {
		t.Errorf("content %q does not say what was left out", p.Content)
	}
}
