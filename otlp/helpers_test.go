package otlp

import (
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// now is the reference time of every test; spans start a minute before it.
var now = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

var (
	traceID  = []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	spanID   = []byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanHex  = "00f067aa0ba902b7"
	start    = now.Add(-time.Minute)
)

// kv builds an attribute from a Go string, int, float64 or bool.
func kv(key string, value any) *commonpb.KeyValue {
	av := &commonpb.AnyValue{}
	switch v := value.(type) {
	case string:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: v}
	case int:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: int64(v)}
	case float64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v}
	case bool:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: v}
	default:
		panic("kv: unsupported value")
	}
	return &commonpb.KeyValue{Key: key, Value: av}
}

// serverSpan is a well-formed MCP tools/call server span lasting 182.5 ms;
// tests change it to make their case.
func serverSpan() *tracepb.Span {
	return &tracepb.Span{
		TraceId:           append([]byte(nil), traceID...),
		SpanId:            append([]byte(nil), spanID...),
		Name:              "tools/call search_docs",
		Kind:              tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(start.UnixNano()),
		EndTimeUnixNano:   uint64(start.UnixNano()) + 182_500_000,
		Attributes: []*commonpb.KeyValue{
			kv("mcp.method.name", "tools/call"),
			kv("gen_ai.tool.name", "search_docs"),
			kv("mcp.session.id", "s-81"),
		},
	}
}

// withAttrs returns span with its attributes replaced by attrs.
func withAttrs(span *tracepb.Span, attrs ...*commonpb.KeyValue) *tracepb.Span {
	span.Attributes = attrs
	return span
}

func request(resource []*commonpb.KeyValue, spans ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: resource},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}

func ptr[T any](v T) *T { return &v }
