package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestOTLPMetricsAndLogsPaths: the metrics and logs paths answer as the
// OTLP spec says, with the ingest key, in the request's encoding, and count
// in partial_success what they did not keep (all of it); nothing reaches the
// call figures.
func TestOTLPMetricsAndLogsPaths(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcp, key := a.newTenant("otlp-signals")
	post := func(path, ct, auth string, body []byte) (int, string, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), b
	}

	metrics := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"mcp.server.operation.duration","histogram":{"dataPoints":[{"count":"2"},{"count":"1"}]}}]}]}]}`
	status, ct, body := post("/v1/otlp/v1/metrics", "application/json", key, []byte(metrics))
	if status != 200 || ct != "application/json" {
		t.Fatalf("metrics: %d %s %s", status, ct, body)
	}
	mr := &colmetricspb.ExportMetricsServiceResponse{}
	if err := protojson.Unmarshal(body, mr); err != nil || mr.GetPartialSuccess().GetRejectedDataPoints() != 2 {
		t.Fatalf("metrics response %s: %v", body, err)
	}

	logs, _ := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{
		LogRecords: []*logspb.LogRecord{{Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "hi"}}}, {}, {}}}}}}})
	status, ct, body = post("/v1/otlp/v1/logs", "application/x-protobuf", key, logs)
	if status != 200 || ct != "application/x-protobuf" {
		t.Fatalf("logs: %d %s %s", status, ct, body)
	}
	lr := &collogspb.ExportLogsServiceResponse{}
	if err := proto.Unmarshal(body, lr); err != nil || lr.GetPartialSuccess().GetRejectedLogRecords() != 3 || lr.GetPartialSuccess().GetErrorMessage() == "" {
		t.Fatalf("logs response %x: %v", body, err)
	}

	if status, _, body := post("/v1/otlp/v1/logs", "application/json", key, []byte(`{}`)); status != 200 || string(body) != "{}" {
		t.Errorf("empty logs request: %d %s, want 200 {} (partial_success unset)", status, body)
	}
	if status, _, _ := post("/v1/otlp/v1/metrics", "application/json", "", []byte(metrics)); status != 401 {
		t.Errorf("no key: %d, want 401", status)
	}
	if status, _, _ := post("/v1/otlp/v1/metrics", "application/json", token, []byte(metrics)); status != 401 && status != 403 {
		t.Errorf("session token instead of an ingest key: %d, want 401 or 403", status)
	}
	if status, _, _ := post("/v1/otlp/v1/metrics", "text/plain", key, []byte(metrics)); status != 415 {
		t.Errorf("text/plain: %d, want 415", status)
	}
	if status, _, _ := post("/v1/otlp/v1/logs", "application/x-protobuf", key, []byte{0x0a, 0x05, 0x12}); status != 400 {
		t.Errorf("malformed protobuf: %d, want 400", status)
	}
	if o := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview", token, nil); num(o["calls"]) != 0 {
		t.Errorf("metrics and logs became calls: %v", o)
	}
}
