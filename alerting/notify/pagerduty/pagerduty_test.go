package pagerduty

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

func TestBuildEpisodeKeyAndResolve(t *testing.T) {
	ep := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	v := 0.2
	fired := alerting.Message{Kind: alerting.KindFiring, RuleID: "rul_1", Title: "Firing: x", MCPName: "docs", Severity: "warning",
		At: ep, EpisodeAt: ep, Details: alerting.Details{Metric: "error_rate", Threshold: 0.1, Value: &v}}
	again := fired
	again.At = ep.Add(30 * time.Minute) // a re-notification
	resolved := fired
	resolved.Kind, resolved.At = alerting.KindResolved, ep.Add(time.Hour)
	next := fired
	next.EpisodeAt = ep.Add(2 * time.Hour)
	f, a, r, n := Build("k", fired), Build("k", again), Build("k", resolved), Build("k", next)
	if f.DedupKey != a.DedupKey || f.DedupKey != r.DedupKey || f.DedupKey == n.DedupKey {
		t.Errorf("keys %s %s %s %s", f.DedupKey, a.DedupKey, r.DedupKey, n.DedupKey)
	}
	if f.EventAction != ActionTrigger || f.Payload.Severity != "warning" || f.Payload.Summary != "[warning] Firing: x on docs" ||
		f.Payload.CustomDetails["threshold"] != 0.1 {
		t.Errorf("trigger %+v", f.Payload)
	}
	if r.EventAction != ActionResolve || r.Payload != nil || r.Links != nil {
		t.Errorf("resolve %+v", r)
	}
	if Build("k", alerting.Message{Kind: alerting.KindFiring, Severity: "bogus"}).Payload.Severity != "error" {
		t.Error("an unknown severity is not mapped to error")
	}
}

func TestRoutingKey(t *testing.T) {
	for k, ok := range map[string]bool{"R0UT1NGKEYabcdefghijklmnopqrstuv": true, "short": false,
		"R0UT1NGKEYabcdefghijklmnopqrstu!": false, "R0UT1NGKEYabcdefghijklmnopqrstuvw": false} {
		s, err := Integration.Connection.Open(context.Background(), map[string]string{"routing_key": k}, alerting.ConnectEnv{})
		if (err == nil) != ok || (ok && (s.Secret != k || s.Hint == "" || len(s.Hint) > 0 && contains(s.Hint, k))) {
			t.Errorf("%q: %+v %v", k, s, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestRegion: the region is optional (us), eu is stored with its prefix
// and sends to the EU endpoint, anything else is refused on body.region.
func TestRegion(t *testing.T) {
	const k = "R0UT1NGKEYabcdefghijklmnopqrstuv"
	for region, want := range map[string]string{"": Endpoint, "us": Endpoint, "EU": EndpointEU, " eu ": EndpointEU, "ap": ""} {
		s, err := open(context.Background(), map[string]string{"routing_key": k, "region": region}, alerting.ConnectEnv{})
		if want == "" {
			if err == nil || !contains(err.Error(), "region") {
				t.Errorf("region %q accepted: %+v %v", region, s, err)
			}
			continue
		}
		endpoint, key := splitConnection(s.Secret)
		if err != nil || endpoint != want || key != k || contains(s.Hint, k) {
			t.Errorf("region %q: %+v %v -> %s %s", region, s, err, endpoint, key)
		}
	}
}
