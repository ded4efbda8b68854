package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func resourceOf(name, instance string) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strKV("service.name", name),
		strKV("service.instance.id", instance), strKV("service.version", "2.0.1")}}
}

// durationPoint is a point of mcp.server.operation.duration over the
// interval ending at end, with the conventions' first bounds (seconds).
func durationPoint(end time.Time, counts []uint64, attrs ...*commonpb.KeyValue) *metricspb.HistogramDataPoint {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return &metricspb.HistogramDataPoint{Attributes: attrs, StartTimeUnixNano: uint64(end.Add(-time.Minute).UnixNano()),
		TimeUnixNano: uint64(end.UnixNano()), Count: n, BucketCounts: counts, ExplicitBounds: []float64{0.01, 0.1, 1}}
}

func durationExport(res *resourcepb.Resource, temporality metricspb.AggregationTemporality, points ...*metricspb.HistogramDataPoint) []byte {
	b, err := proto.Marshal(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: res,
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "mcp.server"}, Metrics: []*metricspb.Metric{
			{Name: "mcp.server.operation.duration", Unit: "s", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
				AggregationTemporality: temporality, DataPoints: points}}},
			{Name: "process.cpu.time", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: []*metricspb.NumberDataPoint{{}}}}},
		}}},
	}}})
	if err != nil {
		panic(err)
	}
	return b
}

// postOTLPProto sends a protobuf OTLP export to path, gzipped, and returns
// the status and the decoded partial success of a metrics answer.
func postOTLPProto(t *testing.T, base, path, key string, body []byte) (int, *colmetricspb.ExportMetricsPartialSuccess) {
	t.Helper()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(body)
	w.Close()
	req, _ := http.NewRequest("POST", base+path, &gz)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasSuffix(path, "/metrics") {
		return res.StatusCode, nil
	}
	mr := &colmetricspb.ExportMetricsServiceResponse{}
	if err := proto.Unmarshal(b, mr); err != nil {
		t.Fatalf("metrics response %x: %v", b, err)
	}
	return res.StatusCode, mr.GetPartialSuccess()
}

// TestOTLPMetricsBecomeCalls posts real OTLP metrics protobuf bodies
// (gzip) through the running service and reads the calls, errors and
// latency back from the metric reads: a retried export counts once,
// cumulative points are refused with the reason, and an emitter that also
// sends spans is counted from its spans only.
func TestOTLPMetricsBecomeCalls(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcp, key := a.newTenant("otlp-metrics")
	end := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	day := end.Format(time.DateOnly)
	rng := "?from=" + day + "&to=" + day

	search := []*commonpb.KeyValue{strKV("mcp.method.name", "tools/call"), strKV("gen_ai.tool.name", "search")}
	body := durationExport(resourceOf("py-mcp", "i-1"), metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
		durationPoint(end, []uint64{1, 2, 0, 0}, search...),                                            // 5, 55, 55 ms
		durationPoint(end, []uint64{0, 0, 1, 0}, append(search, strKV("error.type", "tool_error"))...), // 550 ms, failed
		durationPoint(end, []uint64{0, 0, 0, 2}, strKV("mcp.method.name", "resources/read")),           // 1000 ms twice
	)
	status, ps := postOTLPProto(t, base, "/v1/otlp/v1/metrics", key, body)
	if status != 200 || ps.GetRejectedDataPoints() != 1 || !strings.Contains(ps.GetErrorMessage(), "only the histogram mcp.server.operation.duration is read") {
		t.Fatalf("first export: %d %v", status, ps)
	}
	// The exporter retries the same body (say its first answer was lost).
	status, ps = postOTLPProto(t, base, "/v1/otlp/v1/metrics", key, body)
	if status != 200 || !strings.Contains(ps.GetErrorMessage(), "6 call(s) already received") {
		t.Fatalf("retry: %d %v", status, ps)
	}

	check := func(wantCalls int, wantAvg float64) {
		t.Helper()
		eventually(t, 5*time.Second, func() error {
			ov := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview"+rng, token, nil)
			if num(ov["calls"]) != float64(wantCalls) || num(ov["errors"]) != 1 || num(ov["avg_ms"]) != wantAvg {
				return fmt.Errorf("overview %v; want %d calls, 1 error, avg %v ms", ov, wantCalls, wantAvg)
			}
			return nil
		})
	}
	check(6, (5+55+55+550+1000+1000)/6.0)
	eventually(t, 5*time.Second, func() error {
		tool := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools/search"+rng, token, nil)
		if num(tool["calls"]) != 4 || num(tool["errors"]) != 1 || num(tool["avg_ms"]) != (5+55+55+550)/4.0 {
			return fmt.Errorf("search: %v", tool)
		}
		if et := tool["error_types"].([]any); len(et) != 1 || et[0].(map[string]any)["error_type"] != "tool_error" {
			return fmt.Errorf("error types: %v", et)
		}
		return nil
	})
	byVersion := a.must(200, "GET", "/v1/mcps/"+mcp+"/breakdown"+rng+"&by=server_version", token, nil)["items"].([]any)
	if len(byVersion) != 1 || byVersion[0].(map[string]any)["value"] != "2.0.1" {
		t.Errorf("server versions: %v", byVersion)
	}

	// Cumulative points are refused, with how to fix it.
	status, ps = postOTLPProto(t, base, "/v1/otlp/v1/metrics", key, durationExport(resourceOf("py-mcp", "i-1"),
		metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, durationPoint(end.Add(time.Second), []uint64{5, 0, 0, 0}, search...)))
	if status != 200 || ps.GetRejectedDataPoints() != 2 || !strings.Contains(ps.GetErrorMessage(), "1 data point(s) cumulative") ||
		!strings.Contains(ps.GetErrorMessage(), "DELTA") && !strings.Contains(ps.GetErrorMessage(), "delta") {
		t.Fatalf("cumulative: %d %v", status, ps)
	}

	// Spans win: an emitter that sent an MCP span has its points skipped;
	// another instance of the same service, which sent none, is read.
	span, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: resourceOf("both-mcp", "i-2"),
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: bytes.Repeat([]byte{9}, 16), SpanId: bytes.Repeat([]byte{3}, 8), Name: "tools/call search",
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: uint64(end.UnixNano()), EndTimeUnixNano: uint64(end.Add(55 * time.Millisecond).UnixNano()),
			Attributes: search,
		}}}},
	}}})
	if status, _ := postOTLPProto(t, base, "/v1/otlp/v1/traces", key, span); status != 200 {
		t.Fatalf("traces: %d", status)
	}
	status, ps = postOTLPProto(t, base, "/v1/otlp/v1/metrics", key, durationExport(resourceOf("both-mcp", "i-2"),
		metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, durationPoint(end, []uint64{0, 1, 0, 0}, search...)))
	if status != 200 || ps.GetRejectedDataPoints() != 2 || !strings.Contains(ps.GetErrorMessage(), "1 data point(s) skipped") {
		t.Fatalf("spans win: %d %v", status, ps)
	}
	status, ps = postOTLPProto(t, base, "/v1/otlp/v1/metrics", key, durationExport(resourceOf("both-mcp", "i-3"),
		metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA, durationPoint(end, []uint64{1, 0, 0, 0}, search...)))
	if status != 200 || ps.GetRejectedDataPoints() != 1 {
		t.Fatalf("another instance: %d %v", status, ps)
	}
	// 6 calls from metrics, the span (55 ms), the other instance's point (5 ms).
	check(8, (5+55+55+550+1000+1000+55+5)/8.0)
}

// TestOTelGoSDKMetricsExporter points the official OpenTelemetry Go SDK's
// OTLP/HTTP metrics exporter at the service as a user would (endpoint and
// header environment variables), records mcp.server.operation.duration
// with the conventions' buckets, and reads the calls back. With the
// exporter's default (cumulative) temporality the export is answered with
// a partial success saying why, and nothing is counted.
func TestOTelGoSDKMetricsExporter(t *testing.T) {
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcp, key := a.newTenant("otel-metrics")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base+"/v1/otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20"+key)
	ctx := context.Background()
	res := resource.NewSchemaless(attribute.String("service.name", "go-mcp"), attribute.String("service.version", "0.3.0"))

	record := func(opts ...otlpmetrichttp.Option) error {
		exp, err := otlpmetrichttp.New(ctx, append(opts, otlpmetrichttp.WithInsecure())...)
		if err != nil {
			t.Fatal(err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
		defer mp.Shutdown(ctx)
		h, err := mp.Meter("mcp.server").Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
		if err != nil {
			t.Fatal(err)
		}
		call := func(tool string, seconds float64, extra ...attribute.KeyValue) {
			kv := append([]attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool)}, extra...)
			h.Record(ctx, seconds, metric.WithAttributes(kv...))
		}
		call("search", 0.015)                                             // bucket (0.01, 0.02]: 15 ms
		call("search", 0.3, attribute.String("error.type", "tool_error")) // (0.2, 0.5]: 350 ms
		call("fetch", 0.07)                                               // (0.05, 0.1]: 75 ms
		return mp.ForceFlush(ctx)
	}

	if err := record(); err == nil || !strings.Contains(err.Error(), "cumulative") {
		t.Fatalf("default (cumulative) temporality: %v, want a partial success naming it", err)
	}
	deltaOnly := otlpmetrichttp.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality })
	if err := record(deltaOnly); err != nil {
		t.Fatalf("delta export: %v", err)
	}

	day := time.Now().UTC().Format(time.DateOnly)
	rng := "?from=" + day + "&to=" + day
	eventually(t, 5*time.Second, func() error {
		ov := a.must(200, "GET", "/v1/mcps/"+mcp+"/overview"+rng, token, nil)
		if num(ov["calls"]) != 3 || num(ov["errors"]) != 1 || num(ov["avg_ms"]) != (15+350+75)/3.0 {
			return fmt.Errorf("overview %v; want 3 calls, 1 error, avg %v", ov, (15+350+75)/3.0)
		}
		tool := a.must(200, "GET", "/v1/mcps/"+mcp+"/tools/search"+rng, token, nil)
		if num(tool["calls"]) != 2 || num(tool["errors"]) != 1 {
			return fmt.Errorf("search: %v", tool)
		}
		return nil
	})
}
