package main

import "testing"

// TestHistoryRecordsEveryEnd: a firing rule that is redefined, disabled
// or deleted gets a resolved event with the reason in its history (a
// deleted rule's history stays readable by its id), whether or not it
// notifies anyone.
func TestHistoryRecordsEveryEnd(t *testing.T) {
	t.Parallel()
	e := newDeliveryEnv(t, false)
	events := func(rule string) []map[string]any {
		var out []map[string]any
		for _, x := range e.a.must(200, "GET", "/v1/rules/"+rule+"/events", e.token, nil)["items"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	for reason, end := range map[string]func(rule string){
		"redefined": func(r string) { e.a.must(200, "PATCH", "/v1/rules/"+r, e.token, map[string]any{"threshold": 2}) },
		"disabled":  func(r string) { e.a.must(200, "PATCH", "/v1/rules/"+r, e.token, map[string]any{"enabled": false}) },
		"deleted":   func(r string) { e.a.must(204, "DELETE", "/v1/rules/"+r, e.token, nil) },
	} {
		rule := e.fireWith(t, map[string]any{"name": reason, "channels": []string{"in_app"}})
		end(rule)
		ev := events(rule)
		if len(ev) != 2 || ev[0]["kind"] != "resolved" || ev[0]["reason"] != reason || ev[0]["value"] != nil || ev[1]["kind"] != "fired" || ev[1]["reason"] != nil {
			t.Errorf("%s: history %v", reason, ev)
		}
	}
	// A rule that was not firing ends nothing.
	r := e.a.must(201, "POST", "/v1/mcps/"+e.mcp+"/rules", e.token, map[string]any{"name": "quiet", "metric": "calls",
		"comparator": ">", "threshold": 1, "window_minutes": 5, "channels": []string{"in_app"}})["id"].(string)
	e.a.must(200, "PATCH", "/v1/rules/"+r, e.token, map[string]any{"enabled": false})
	if ev := events(r); len(ev) != 0 {
		t.Errorf("a rule that never fired: %v", ev)
	}
	e.a.must(404, "GET", "/v1/rules/rul_0000000000000000/events", e.token, nil)
}
