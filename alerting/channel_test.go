package alerting

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpscope/telemetry"
)

func TestCatalogue(t *testing.T) {
	want := map[string]struct {
		scope    string
		delivers bool
	}{
		ChannelInApp: {ScopePersonal, true}, ChannelEmail: {ScopePersonal, false},
		ChannelSlack: {ScopeTeam, false}, ChannelDiscord: {ScopeTeam, false},
		"pagerduty": {ScopeTeam, false}, "teams": {ScopeTeam, false}, "google_chat": {ScopeTeam, false}, "webhook": {ScopeTeam, false},
	}
	cat := Catalogue()
	if len(cat) != len(want) {
		t.Fatalf("catalogue has %d entries, want %d", len(cat), len(want))
	}
	for _, e := range cat {
		w, ok := want[e.ID]
		if !ok || e.Scope != w.scope || e.Delivers != w.delivers || e.Label == "" || e.Description == "" {
			t.Errorf("entry %+v", e)
		}
		if !ValidChannel(e.ID) || IsTeamChannel(e.ID) != (w.scope == ScopeTeam) || IsPersonalChannel(e.ID) != (w.scope == ScopePersonal) {
			t.Errorf("predicates disagree with the catalogue for %s", e.ID)
		}
	}
	cat[0].Label = "changed"
	if Catalogue()[0].Label == "changed" {
		t.Error("Catalogue exposes the shared slice")
	}
	for _, id := range []string{"", "IN_APP", "Teams", "sms"} {
		if ValidChannel(id) || IsTeamChannel(id) || IsPersonalChannel(id) {
			t.Errorf("%q counts as a channel", id)
		}
	}
}

func TestListChannels(t *testing.T) {
	hint := "hooks.slack.com/services/T0001/B0001/" + WebhookMask
	chs := ListChannels(map[string]string{ChannelSlack: hint})
	if len(chs) != len(Catalogue()) {
		t.Fatalf("%d channels, want every channel", len(chs))
	}
	byID := map[string]Channel{}
	for _, c := range chs {
		byID[c.ID] = c
	}
	if c := byID[ChannelSlack]; !c.Connected || c.WebhookHint == nil || *c.WebhookHint != hint {
		t.Errorf("slack = %+v", c)
	}
	if c := byID[ChannelDiscord]; c.Connected || c.WebhookHint != nil {
		t.Errorf("discord = %+v", c)
	}
	for _, id := range []string{ChannelInApp, ChannelEmail} {
		if c := byID[id]; !c.Connected || c.WebhookHint != nil {
			t.Errorf("%s = %+v", id, c)
		}
	}
	b, _ := json.Marshal(byID[ChannelDiscord])
	want := []string{"connect_fields", "connected", "delivers", "description", "health", "id", "label", "scope", "webhook_hint"}
	if got := jsonKeys(t, b); !reflect.DeepEqual(got, want) {
		t.Errorf("keys = %v, want %v", got, want)
	}
}

func TestPreferences(t *testing.T) {
	if p := DefaultPreferences(); !p.InApp || !p.Email {
		t.Errorf("default = %+v, want everything on", p)
	}
	p := Preferences{InApp: true, Email: false}
	for ch, want := range map[string]bool{ChannelInApp: true, ChannelEmail: false, ChannelSlack: false, "x": false} {
		if p.Allows(ch) != want {
			t.Errorf("Allows(%s) = %v", ch, !want)
		}
	}
	b, _ := json.Marshal(p)
	if string(b) != `{"in_app":true,"email":false}` {
		t.Errorf("json = %s", b)
	}
}

func TestDecodePreferencesUpdate(t *testing.T) {
	start := Preferences{InApp: true, Email: true}
	tests := []struct {
		name  string
		body  string
		code  string
		field string
		want  Preferences
	}{
		{name: "email only", body: `{"email": false}`, want: Preferences{InApp: true, Email: false}},
		{name: "both", body: `{"in_app": false, "email": false}`, want: Preferences{}},
		{name: "empty merge changes nothing", body: `{}`, want: start},
		{name: "true keeps true", body: `{"in_app": true}`, want: start},
		{name: "team channel", body: `{"slack": false}`, code: telemetry.EINVALID, field: "body.slack"},
		{name: "team channel beside a valid key", body: `{"email": false, "discord": true}`, code: telemetry.EINVALID, field: "body.discord"},
		{name: "unknown key", body: `{"sms": true}`, code: telemetry.EINVALID, field: "body.sms"},
		{name: "null value", body: `{"email": null}`, code: telemetry.EINVALID, field: "body.email"},
		{name: "string value", body: `{"email": "false"}`, code: telemetry.EINVALID, field: "body.email"},
		{name: "number value", body: `{"in_app": 0}`, code: telemetry.EINVALID, field: "body.in_app"},
		{name: "not an object", body: `[true]`, code: telemetry.EBADREQUEST},
		{name: "null body", body: `null`, code: telemetry.EBADREQUEST},
		{name: "malformed", body: `{"email": fals`, code: telemetry.EBADREQUEST},
		{name: "empty body", body: ``, code: telemetry.EBADREQUEST},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := DecodePreferencesUpdate([]byte(tt.body))
			if tt.code != "" {
				var e *telemetry.Error
				if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
					t.Fatalf("error = %v, want %s on %q", err, tt.code, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Apply(start); got != tt.want {
				t.Errorf("Apply = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzDecodePreferencesUpdate checks that a preferences body either fails
// with a client error or changes exactly the personal switches it names, to
// the boolean it gives.
func FuzzDecodePreferencesUpdate(f *testing.F) {
	for _, s := range []string{`{"email": false}`, `{"in_app": true, "email": false}`, `{}`, `{"slack": true}`, `{"email": null}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := DecodePreferencesUpdate(body)
		if err != nil {
			if c := telemetry.ErrorCode(err); c != telemetry.EINVALID && c != telemetry.EBADREQUEST {
				t.Fatalf("error code %s for %q", c, body)
			}
			return
		}
		var m map[string]bool
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted %q, which is not an object of booleans: %v", body, err)
		}
		for k, v := range m {
			got := u.Apply(Preferences{InApp: !v, Email: !v})
			if !IsPersonalChannel(k) || got.Allows(k) != v {
				t.Fatalf("accepted %q: key %q, value %v, result %+v", body, k, v, got)
			}
		}
		if (u.InApp != nil) != hasKey(m, ChannelInApp) || (u.Email != nil) != hasKey(m, ChannelEmail) {
			t.Fatalf("accepted %q: update %+v sets switches the body does not name", body, u)
		}
	})
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}
