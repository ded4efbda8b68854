package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// Hostile input against the running service: gzip bombs and OTLP bodies
// of empty spans are refused without a 5xx, ingest from the same key keeps
// working, and a flood of made-up methods on unknown paths adds no label
// sets to /metrics.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	_, base := startMain(t, cfg)
	a := api{t, base}
	_, _, key := a.newTenant("hostile")

	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return buf.Bytes()
	}
	post := func(path, ct string, body []byte) (int, string) {
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Content-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	bomb := gz([]byte(`{"items":[` + strings.TrimSuffix(strings.Repeat("{},", 349_000), ",") + `]}`))
	spans := gz([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.TrimSuffix(strings.Repeat("{},", 340_000), ",") + `]}]}]}`))
	type result struct {
		code int
		body string
	}
	results := make(chan result, 20)
	for i := 0; i < 10; i++ {
		go func() { c, b := post("/v1/ingest", "application/json", bomb); results <- result{c, b} }()
		go func() { c, b := post("/v1/otlp/v1/traces", "application/json", spans); results <- result{c, b} }()
	}
	for i := 0; i < 20; i++ {
		r := <-results
		if r.code != 413 && r.code != 503 {
			t.Errorf("hostile body: %d %.200s", r.code, r.body)
		}
	}
	if code, body := post("/v1/ingest", "application/json", gz([]byte(`{"items":[{"timestamp":"`+time.Now().UTC().Format(time.RFC3339)+`","session_id":"s","method":"ping"}]}`))); code != 202 {
		t.Fatalf("ingest after the bombs: %d %s", code, body)
	}

	for i := 0; i < 300; i++ {
		req, _ := http.NewRequest("X"+strings.Repeat("Y", i%7)+string(rune('A'+i%26)), base+"/made/up/"+strings.Repeat("p", i), nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(res.Body)
	sets := 0
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "telemetry_http_requests_total{") {
			sets++
			if strings.Contains(line, "/made/up") || strings.Contains(line, `method="X`) {
				t.Errorf("a label taken from the request: %s", line)
			}
		}
	}
	if sets == 0 || sets > 20 {
		t.Errorf("%d label sets of telemetry_http_requests_total after the flood", sets)
	}
}
