package otlp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Every emitter fixture decodes as OTLP/JSON (its _source note is an
// unknown field, ignored), and exactly its spans that are not calls are
// rejected: client spans of calls also sent as server spans, notifications,
// session and wrapper spans. What the calls read back as through the
// service is checked by cmd/telemetryd's TestEmitterFixtures.
func TestEmitterFixturesDecode(t *testing.T) {
	notCalls := map[string]int{
		"python-sdk-v2.json":      2, // its CLIENT span, notifications/cancelled
		"semconv.json":            2, // notifications/initialized, the CLIENT span
		"aws-distro.json":         3, // mcp.session, the CLIENT span, notifications/cancelled
		"openllmetry-js.json":     1, // mcp.client.session
		"openllmetry-python.json": 2, // mcp.server, the server's tool span of the client's call
		"shinzo.json":             0,
		"openlit.json":            0,
	}
	paths, err := filepath.Glob("testdata/*.json")
	if err != nil || len(paths) != len(notCalls) {
		t.Fatalf("fixtures %v, %v: want the %d of notCalls", paths, err, len(notCalls))
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		req, err := Decode(body, ContentTypeJSON)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		items, rejected := Map(req, time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC))
		want, ok := notCalls[filepath.Base(p)]
		if !ok || rejected != want || len(items) == 0 {
			t.Errorf("%s: %d items, %d rejected; want %d rejected", p, len(items), rejected, want)
		}
	}
}
