package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry/alerting"
)

func msg(name string) alerting.Message {
	return alerting.Message{Kind: alerting.KindFiring, RuleName: name, MCPName: "docs <server>", Title: "Firing: " + name,
		Body: "Over the last 5 minutes: calls 0 (rule: < 1).", Summary: "calls 0 < 1", At: time.Unix(1_800_000_000, 0),
		RuleURL: "https://t.example/app/mcps/m/alerts/r", SettingsURL: "https://t.example/app/channels"}
}

func TestEscape(t *testing.T) {
	if got := Escape("<!channel> & <https://evil|click> @here"); got != "&lt;!channel&gt; &amp; &lt;https://evil|click&gt; @here" {
		t.Errorf("Escape = %q", got)
	}
}

func TestBuildOne(t *testing.T) {
	p := Build(alerting.Envelope{Messages: []alerting.Message{msg("errors <!channel>")}})
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), "<!channel>") || strings.Contains(string(b), "<server>") {
		t.Errorf("unescaped user input: %s", b)
	}
	if p.Text == "" || len(p.Blocks) != 3 || p.Blocks[0].Type != "header" || p.Blocks[1].Type != "section" || p.Blocks[2].Type != "context" {
		t.Fatalf("shape: %s", b)
	}
	if !strings.Contains(p.Blocks[1].Text.Text, "<https://t.example/app/mcps/m/alerts/r|View the rule>") {
		t.Errorf("no rule link: %s", p.Blocks[1].Text.Text)
	}
}

// A digest larger than Slack's 50 blocks is cut, saying how many are left
// out; every text stays within its limit.
func TestBuildLimits(t *testing.T) {
	var e alerting.Envelope
	long := strings.Repeat("x", 5000)
	for i := 0; i < 30; i++ {
		m := msg(long)
		m.Title, m.Body = long, long
		e.Messages = append(e.Messages, m)
	}
	p := Build(e)
	if len(p.Blocks) > MaxBlocks {
		t.Fatalf("%d blocks", len(p.Blocks))
	}
	last := p.Blocks[len(p.Blocks)-1]
	if last.Type != "context" || !strings.HasPrefix(last.Elements[0].Text, "…and ") {
		t.Errorf("last block %+v", last)
	}
	for _, b := range p.Blocks {
		if b.Type == "header" && utf8.RuneCountInString(b.Text.Text) > MaxHeaderChars {
			t.Errorf("header of %d chars", utf8.RuneCountInString(b.Text.Text))
		}
		if b.Type == "section" && utf8.RuneCountInString(b.Text.Text) > MaxSectionText {
			t.Errorf("section of %d chars", utf8.RuneCountInString(b.Text.Text))
		}
	}
	if utf8.RuneCountInString(p.Text) > MaxFallback || !strings.HasPrefix(p.Text, "30 alerts") {
		t.Errorf("fallback %d chars: %.40q", utf8.RuneCountInString(p.Text), p.Text)
	}
}
