package alerting

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanFanOut(t *testing.T) {
	on, emailOff, inAppOff, allOff := DefaultPreferences(), Preferences{InApp: true}, Preferences{Email: true}, Preferences{}
	everyone := []Member{{"u1", on}, {"u2", emailOff}, {"u3", inAppOff}, {"u4", allOff}}
	both := map[string]bool{ChannelSlack: true, ChannelDiscord: true}
	tests := []struct {
		name      string
		channels  []string
		audience  []Member
		connected map[string]bool
		want      []string // channel:recipient:status
	}{
		{"in_app for those who allow it", []string{ChannelInApp}, everyone, nil,
			[]string{"in_app:u1:delivered", "in_app:u2:delivered"}},
		{"email queued for those who allow it", []string{ChannelEmail}, everyone, nil,
			[]string{"email:u1:queued", "email:u3:queued"}},
		{"both personal channels", []string{ChannelEmail, ChannelInApp}, everyone, nil,
			[]string{"in_app:u1:delivered", "email:u1:queued", "in_app:u2:delivered", "email:u3:queued"}},
		{"preference on but rule does not name the channel", []string{ChannelSlack}, []Member{{"u1", on}}, both,
			[]string{"slack:-:queued"}},
		{"team channel connected: one delivery, not per person", []string{ChannelDiscord}, everyone, both,
			[]string{"discord:-:queued"}},
		{"team channel not connected: nothing", []string{ChannelSlack, ChannelDiscord}, everyone, map[string]bool{ChannelDiscord: true},
			[]string{"discord:-:queued"}},
		{"only unconnected team channels: nothing at all", []string{ChannelSlack}, everyone, nil, nil},
		{"connected false counts as not connected", []string{ChannelSlack}, everyone, map[string]bool{ChannelSlack: false}, nil},
		{"team delivery even with nobody on the team", []string{ChannelSlack, ChannelInApp}, nil, both,
			[]string{"slack:-:queued"}},
		{"everyone muted, team channel still gets it", []string{ChannelInApp, ChannelEmail, ChannelSlack}, []Member{{"u4", allOff}}, both,
			[]string{"slack:-:queued"}},
		{"all channels", []string{ChannelSlack, ChannelInApp, ChannelDiscord, ChannelEmail}, []Member{{"u1", on}}, both,
			[]string{"in_app:u1:delivered", "email:u1:queued", "slack:-:queued", "discord:-:queued"}},
		{"duplicate and empty members once", []string{ChannelInApp}, []Member{{"u1", on}, {"", on}, {"u1", on}}, nil,
			[]string{"in_app:u1:delivered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := firingRule()
			r.Channels = tt.channels
			plan := PlanFanOut(r, 0.2, tt.audience, tt.connected)
			var got []string
			for _, d := range plan {
				who := "-"
				if d.RecipientUserID != nil {
					who = *d.RecipientUserID
				}
				got = append(got, d.Channel+":"+who+":"+d.Status)
				if d.Title != FiringTitle(r, 0.2) || d.Body != FiringBody(r, 0.2) {
					t.Errorf("delivery text = %q / %q", d.Title, d.Body)
				}
				if IsTeamChannel(d.Channel) != (d.RecipientUserID == nil) {
					t.Errorf("recipient of %s = %v", d.Channel, d.RecipientUserID)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan = %v\nwant   %v", got, tt.want)
			}
		})
	}
}

func TestPlanFanOutRecipientsAreDistinct(t *testing.T) {
	r := firingRule()
	r.Channels = []string{ChannelInApp}
	plan := PlanFanOut(r, 1, []Member{{"u1", DefaultPreferences()}, {"u2", DefaultPreferences()}}, nil)
	*plan[0].RecipientUserID = "changed"
	if *plan[1].RecipientUserID != "u2" {
		t.Fatal("planned deliveries share a recipient pointer")
	}
}

func TestFiringText(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		cmp    string
		thr    float64
		window int
		tool   *string
		value  float64
		title  string
		body   string
	}{
		{"error rate as percent", MetricErrorRate, CompGT, 0.05, 5, strp("search_docs"), 0.125,
			"Firing: R (error rate 12.5%)", "Over the last 5 minutes: error rate 12.5% for tool search_docs (rule: > 5%)."},
		{"p95 rounded", MetricP95, CompGE, 500, 60, nil, 812.3456,
			"Firing: R (p95 latency 812.3 ms)", "Over the last hour: p95 latency 812.3 ms (rule: >= 500 ms)."},
		{"calls", MetricCalls, CompLT, 1, 1, nil, 0,
			"Firing: R (calls 0)", "Over the last minute: calls 0 (rule: < 1)."},
		{"errors over hours", MetricErrors, CompGT, 10, 180, nil, 42,
			"Firing: R (errors 42)", "Over the last 3 hours: errors 42 (rule: > 10)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Rule{Name: "R", Metric: tt.metric, Comparator: tt.cmp, Threshold: tt.thr, WindowMinutes: tt.window, Tool: tt.tool}
			if got := FiringTitle(r, tt.value); got != tt.title {
				t.Errorf("title = %q, want %q", got, tt.title)
			}
			if got := FiringBody(r, tt.value); got != tt.body {
				t.Errorf("body = %q, want %q", got, tt.body)
			}
		})
	}
}

func TestDeliveryJSON(t *testing.T) {
	uid := "u1"
	d := Delivery{Body: "b", Notification: Notification{ID: "d1", RuleID: "r1", MCPID: "m1", Channel: ChannelInApp,
		RecipientUserID: &uid, Status: StatusDelivered, Title: "t", CreatedAt: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}}
	b, _ := json.Marshal(d)
	want := []string{"attempts", "body", "channel", "created_at", "id", "last_attempt_at", "last_error", "mcp_id", "message_id",
		"next_attempt_at", "read_at", "recipient_user_id", "rule_id", "sent_at", "severity", "status", "title"}
	if got := jsonKeys(t, b); !reflect.DeepEqual(got, want) {
		t.Errorf("delivery keys = %v", got)
	}
	n := d.Notification
	b, _ = json.Marshal(n)
	want = []string{"attempts", "channel", "created_at", "id", "last_attempt_at", "last_error", "mcp_id", "message_id",
		"next_attempt_at", "recipient_user_id", "rule_id", "sent_at", "severity", "status", "title"}
	if got := jsonKeys(t, b); !reflect.DeepEqual(got, want) {
		t.Errorf("notification keys = %v, want %v", got, want)
	}
	if n.ID != "d1" || *n.RecipientUserID != "u1" || n.Title != "t" || !n.CreatedAt.Equal(d.CreatedAt) {
		t.Errorf("notification = %+v", n)
	}
	team, _ := json.Marshal(Delivery{Notification: Notification{Channel: ChannelSlack}})
	if !strings.Contains(string(team), `"recipient_user_id":null`) {
		t.Errorf("team-chat notification %s lacks a null recipient", team)
	}
}

func TestNotificationFilterValidate(t *testing.T) {
	tests := []struct {
		name  string
		f     NotificationFilter
		field string
	}{
		{"empty", NotificationFilter{}, ""},
		{"channel and status", NotificationFilter{Channel: ChannelSlack, Status: StatusQueued, Limit: 10}, ""},
		{"unknown channel", NotificationFilter{Channel: "sms"}, "query.channel"},
		{"sent and failed", NotificationFilter{Status: StatusFailed}, ""},
		{"unknown status", NotificationFilter{Status: "bounced"}, "query.status"},
		{"limit too large", NotificationFilter{Limit: MaxPageLimit + 1}, "query.limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			wantField(t, f.Validate(), tt.field)
			if tt.field == "" && f.Limit == 0 {
				t.Error("default limit not applied")
			}
		})
	}
}
