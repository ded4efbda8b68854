package main

import (
	"testing"
	"time"
)

// The load must look like real traffic and pass the service's own rules:
// an invalid item would be dropped and flatter the figures.
func TestGeneratorItemsAreValidAndRealistic(t *testing.T) {
	g := newGenerator(1, "t-")
	now := time.Now()
	const n = 100_000
	var errs, calls, inits int
	sessions, toolCalls := map[string]int{}, map[string]int{}
	for range n {
		it := g.item(now)
		it.Normalize()
		if !it.Validate(now) {
			t.Fatalf("invalid item %+v", it)
		}
		if it.Status == "error" {
			errs++
		}
		switch it.Method {
		case "tools/call":
			calls++
			toolCalls[it.Name]++
		case "initialize":
			inits++
		}
		sessions[it.SessionID]++
	}
	if e := float64(errs) / n; e < 0.02 || e > 0.045 {
		t.Errorf("error share %.3f, want about 3%%", e)
	}
	if c := float64(calls) / n; c < 0.75 || c > 0.9 {
		t.Errorf("tools/call share %.2f", c)
	}
	if per := float64(n) / float64(len(sessions)); per < 15 || per > 25 {
		t.Errorf("%.1f items per session, want about 20", per)
	}
	if inits < len(sessions)-len(g.active) {
		t.Errorf("%d initialize items for %d sessions: every session starts with one", inits, len(sessions))
	}
	if toolCalls["search_docs"] < 5*toolCalls["deploy"] {
		t.Errorf("tool popularity is not skewed: %v", toolCalls)
	}
	again := newGenerator(1, "t-")
	if a, b := again.item(now), newGenerator(1, "t-").item(now); a.SessionID != b.SessionID || a.Name != b.Name {
		t.Errorf("the generator is not deterministic for a seed")
	}
}
