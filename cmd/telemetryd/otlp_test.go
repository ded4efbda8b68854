package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestOpenTelemetryExporterEndToEnd points the official OpenTelemetry Go
// SDK's OTLP/HTTP exporter (protobuf) at the service exactly as a user
// would, with the endpoint and header environment variables, sends MCP
// server spans, and reads the figures back from overview, tools and
// sessions. The same is then done with an OTLP/JSON body, which the Go
// exporter cannot produce.
func TestOpenTelemetryExporterEndToEnd(t *testing.T) {
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcp, key := a.newTenant("otel")

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base+"/v1/otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20"+key)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "docs-mcp"), attribute.String("service.version", "1.4.0"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	tracer := tp.Tracer("mcp-server")

	start := time.Now().UTC().Add(-time.Minute)
	span := func(method, name, session string, dur time.Duration, errType string, attrs ...attribute.KeyValue) {
		kv := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
		if name != "" {
			kv = append(kv, attribute.String("gen_ai.tool.name", name))
		}
		if session != "" {
			kv = append(kv, attribute.String("mcp.session.id", session))
		}
		kv = append(kv, attrs...)
		_, s := tracer.Start(ctx, method+" "+name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start), trace.WithAttributes(kv...))
		if errType != "" {
			s.SetAttributes(attribute.String("error.type", errType))
			s.SetStatus(codes.Error, "it broke")
		}
		s.End(trace.WithTimestamp(start.Add(dur)))
	}
	span("tools/call", "search", "sess-1", 120*time.Millisecond, "", attribute.String("user.id", "u1"))
	span("tools/call", "search", "sess-1", 80*time.Millisecond, "TimeoutError", attribute.String("user.id", "u1"))
	span("tools/call", "fetch", "sess-2", 40*time.Millisecond, "")
	span("initialize", "", "sess-2", 5*time.Millisecond, "")
	// Not an MCP call: rejected, never stored.
	_, other := tracer.Start(ctx, "SELECT users", trace.WithSpanKind(trace.SpanKindClient))
	other.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("exporter: %v", err)
	}

	// OTLP/JSON, ids in hex, one more call in a third session, gzip off.
	traceID := hex.EncodeToString(bytes.Repeat([]byte{7}, 16))
	body := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.version","value":{"stringValue":"1.4.0"}}]},
	 "scopeSpans":[{"spans":[{"traceId":%q,"spanId":"0102030405060708","name":"tools/call search","kind":2,
	  "startTimeUnixNano":"%d","endTimeUnixNano":"%d",
	  "attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/call"}},{"key":"gen_ai.tool.name","value":{"stringValue":"search"}},
	   {"key":"mcp.session.id","value":{"stringValue":"sess-3"}}]}]}]}]}`, traceID, start.UnixNano(), start.Add(200*time.Millisecond).UnixNano())
	for i := 0; i < 2; i++ { // the second copy is a re-sent span: dropped as a duplicate
		postOTLPJSON(t, base, key, body)
	}

	day := start.Format(time.DateOnly)
	rng := "?from=" + day + "&to=" + day
	eventually(t, 5*time.Second, func() error {
		ov := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview"+rng, token, nil)
		tl := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools"+rng, token, nil)["items"].([]any)
		ss := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions"+rng, token, nil)["items"].([]any)
		if num(ov["calls"]) != 5 || len(tl) != 2 || len(ss) != 3 {
			return fmt.Errorf("overview calls %v, %d tools, %d sessions; want 5, 2, 3", ov["calls"], len(tl), len(ss))
		}
		if num(ov["errors"]) != 1 || num(ov["sessions"]) != 3 || num(ov["avg_ms"]) != (120+80+40+5+200)/5.0 {
			return fmt.Errorf("overview %v", ov)
		}
		return nil
	})
	search := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools/search"+rng, token, nil)
	if num(search["calls"]) != 3 || num(search["errors"]) != 1 || num(search["avg_ms"]) != (120+80+200)/3.0 {
		t.Errorf("search: %v", search)
	}
	et := search["error_types"].([]any)
	if len(et) != 1 || et[0].(map[string]any)["error_type"] != "TimeoutError" || et[0].(map[string]any)["last_message"] != "it broke" {
		t.Errorf("error types: %v", et)
	}
	ss := a.must(200, "GET", "/v1/mcps/"+mcp+"/sessions"+rng+"&limit=10", token, nil)["items"].([]any)
	users := map[string]any{}
	for _, s := range ss {
		m := s.(map[string]any)
		users[m["session_id"].(string)] = m["user_id"]
	}
	if users["sess-1"] != "u1" || users["sess-2"] != nil {
		t.Errorf("sessions: %v", ss)
	}

	// The OTLP route takes ingest keys only, and answers 415 for other types.
	req, _ := http.NewRequest("POST", base+"/v1/otlp/v1/traces", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 403 {
		t.Errorf("session token on OTLP: %v %v", res.StatusCode, err)
	}
	req, _ = http.NewRequest("POST", base+"/v1/otlp/v1/traces", strings.NewReader("x"))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+key)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 415 {
		t.Errorf("text/plain on OTLP: %v %v", res.StatusCode, err)
	}
}

// postOTLPJSON sends an OTLP/JSON trace export with an ingest key and
// expects it taken (200, a JSON answer).
func postOTLPJSON(t *testing.T, base, key, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/otlp/v1/traces", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("OTLP/JSON: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}
