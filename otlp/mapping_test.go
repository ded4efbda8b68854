package otlp

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpscope/telemetry/analytics"
)

// wantItem is the item of serverSpan() under no resource attributes.
func wantItem() analytics.Item {
	return analytics.Item{
		ID:         traceHex + spanHex,
		Timestamp:  start,
		SessionID:  "s-81",
		Method:     "tools/call",
		Name:       "search_docs",
		DurationMs: ptr(182.5),
		Status:     analytics.StatusOK,
	}
}

func TestMapSpan(t *testing.T) {
	longValue := strings.Repeat("x", maxAttributeValue+1)
	tests := []struct {
		name     string
		span     func() *tracepb.Span
		resource []*commonpb.KeyValue
		want     func() analytics.Item // nil: the span is rejected
	}{
		{
			name: "server tools/call, current attribute names",
			span: serverSpan,
			want: wantItem,
		},
		{
			name: "older mcp.tool.name",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("mcp.tool.name", "search_docs"), kv("mcp.session.id", "s-81"))
			},
			want: wantItem,
		},
		{
			name: "gen_ai.tool.name wins over mcp.tool.name",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("mcp.tool.name", "old"), kv("gen_ai.tool.name", "search_docs"), kv("mcp.session.id", "s-81"))
			},
			want: wantItem,
		},
		{
			name: "prompts/get with gen_ai.prompt.name",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "prompts/get"), kv("gen_ai.prompt.name", "analyze-code"), kv("mcp.session.id", "s-81"))
			},
			want: func() analytics.Item { it := wantItem(); it.Method, it.Name = "prompts/get", "analyze-code"; return it },
		},
		{
			name: "prompts/get with older mcp.prompt.name",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "prompts/get"), kv("mcp.prompt.name", "analyze-code"), kv("mcp.session.id", "s-81"))
			},
			want: func() analytics.Item { it := wantItem(); it.Method, it.Name = "prompts/get", "analyze-code"; return it },
		},
		{
			name: "resources/read with mcp.resource.uri",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "resources/read"), kv("mcp.resource.uri", "file:///docs/a.md"), kv("mcp.session.id", "s-81"))
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Method, it.Name = "resources/read", "file:///docs/a.md"
				return it
			},
		},
		{
			name: "tools/call without a name attribute takes the span name's target",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("mcp.session.id", "s-81"))
			},
			want: wantItem,
		},
		{
			name: "tools/call without any tool name is invalid",
			span: func() *tracepb.Span {
				s := withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("mcp.session.id", "s-81"))
				s.Name = "tools/call"
				return s
			},
		},
		{
			name: "initialize has no name",
			span: func() *tracepb.Span {
				s := withAttrs(serverSpan(), kv("mcp.method.name", "initialize"), kv("mcp.session.id", "s-81"))
				s.Name = "initialize"
				return s
			},
			want: func() analytics.Item { it := wantItem(); it.Method, it.Name = "initialize", ""; return it },
		},
		{
			name: "missing session id: none, the service derives it",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "search_docs"))
			},
			want: func() analytics.Item { it := wantItem(); it.SessionID = ""; return it },
		},
		{
			name: "error by status, message from the status",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "upstream timed out"}
				return s
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, "_OTHER", "upstream timed out", "timeout"
				return it
			},
		},
		{
			name: "error by error.type alone",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes = append(s.Attributes, kv("error.type", "tool_error"))
				return s
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Status, it.ErrorType, it.ErrorKind = analytics.StatusError, "tool_error", "tool_error"
				return it
			},
		},
		{
			name: "error.type wins over an OK status",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes = append(s.Attributes, kv("error.type", "-32602"))
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
				return s
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Status, it.ErrorType, it.ErrorKind = analytics.StatusError, "-32602", "invalid_params"
				return it
			},
		},
		{
			name: "error status with an exception event",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}
				s.Events = []*tracepb.Span_Event{
					{Name: "log", Attributes: []*commonpb.KeyValue{kv("exception.type", "Ignored")}},
					{Name: "exception", Attributes: []*commonpb.KeyValue{kv("exception.type", "TimeoutError"), kv("exception.message", "upstream timed out")}},
				}
				return s
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, "TimeoutError", "upstream timed out", "timeout"
				return it
			},
		},
		{
			name: "error status with a JSON-RPC status code (int attribute)",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes = append(s.Attributes, kv("rpc.response.status_code", -32602))
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "Invalid params"}
				return s
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, "-32602", "Invalid params", "invalid_params"
				it.Attributes = map[string]string{"rpc.response.status_code": "-32602"}
				return it
			},
		},
		{
			name: "status message without an error is ignored",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK, Message: "fine"}
				return s
			},
			want: wantItem,
		},
		{
			name: "span without mcp.method.name is not an MCP call",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("http.request.method", "POST"), kv("gen_ai.tool.name", "search_docs"))
			},
		},
		{
			name: "non-string mcp.method.name array is not an MCP call",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes[0] = &commonpb.KeyValue{Key: "mcp.method.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{}}}
				return s
			},
		},
		{
			name: "client span is rejected",
			span: func() *tracepb.Span { s := serverSpan(); s.Kind = tracepb.Span_SPAN_KIND_CLIENT; return s },
		},
		{
			name: "producer span is rejected",
			span: func() *tracepb.Span { s := serverSpan(); s.Kind = tracepb.Span_SPAN_KIND_PRODUCER; return s },
		},
		{
			name: "consumer span is rejected",
			span: func() *tracepb.Span { s := serverSpan(); s.Kind = tracepb.Span_SPAN_KIND_CONSUMER; return s },
		},
		{
			name: "internal span (SDK default kind) is accepted",
			span: func() *tracepb.Span { s := serverSpan(); s.Kind = tracepb.Span_SPAN_KIND_INTERNAL; return s },
			want: wantItem,
		},
		{
			name: "unspecified kind is accepted",
			span: func() *tracepb.Span { s := serverSpan(); s.Kind = tracepb.Span_SPAN_KIND_UNSPECIFIED; return s },
			want: wantItem,
		},
		{
			name: "resource attributes: server version, user, copied attributes",
			span: serverSpan,
			resource: []*commonpb.KeyValue{
				kv("service.name", "docs-mcp"), kv("service.version", "1.4.0"), kv("enduser.id", "u-7"),
				kv("deployment.environment.name", "prod"), kv("host.name", "not-copied"),
			},
			want: func() analytics.Item {
				it := wantItem()
				it.ServerVersion, it.UserID = "1.4.0", "u-7"
				it.Attributes = map[string]string{"service.name": "docs-mcp", "deployment.environment.name": "prod"}
				return it
			},
		},
		{
			name: "span user.id wins over the resource's",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes = append(s.Attributes, kv("user.id", 42))
				return s
			},
			resource: []*commonpb.KeyValue{kv("user.id", "u-resource")},
			want:     func() analytics.Item { it := wantItem(); it.UserID = "42"; return it },
		},
		{
			name: "span enduser.id when there is no user.id",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes = append(s.Attributes, kv("enduser.id", "u-9"))
				return s
			},
			want: func() analytics.Item { it := wantItem(); it.UserID = "u-9"; return it },
		},
		{
			name: "client name and version, span attributes copied, long values skipped",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Attributes = append(s.Attributes, kv("mcp.client.name", "claude-desktop"), kv("mcp.client.version", "0.9.1"),
					kv("mcp.protocol.version", "2025-06-18"), kv("network.transport", longValue), kv("gen_ai.tool.call.arguments", "{}"))
				return s
			},
			resource: []*commonpb.KeyValue{kv("mcp.protocol.version", "resource-loses")},
			want: func() analytics.Item {
				it := wantItem()
				it.ClientName, it.ClientVersion, it.ProtocolVersion = "claude-desktop", "0.9.1", "2025-06-18"
				it.Attributes = map[string]string{"mcp.protocol.version": "2025-06-18"}
				it.ArgsHash = argsHash(map[string]any{}) // gen_ai.tool.call.arguments {}
				return it
			},
		},
		{
			name: "duration keeps nanosecond precision",
			span: func() *tracepb.Span { s := serverSpan(); s.EndTimeUnixNano = s.StartTimeUnixNano + 1_234_567; return s },
			want: func() analytics.Item { it := wantItem(); it.DurationMs = ptr(1.234567); return it },
		},
		{
			name: "zero duration",
			span: func() *tracepb.Span { s := serverSpan(); s.EndTimeUnixNano = s.StartTimeUnixNano; return s },
			want: func() analytics.Item { it := wantItem(); it.DurationMs = ptr(0.0); return it },
		},
		{
			name: "no end time: duration not measured",
			span: func() *tracepb.Span { s := serverSpan(); s.EndTimeUnixNano = 0; return s },
			want: func() analytics.Item { it := wantItem(); it.DurationMs = nil; return it },
		},
		{
			name: "end before start: duration not measured",
			span: func() *tracepb.Span { s := serverSpan(); s.EndTimeUnixNano = s.StartTimeUnixNano - 1; return s },
			want: func() analytics.Item { it := wantItem(); it.DurationMs = nil; return it },
		},
		{
			name: "duration over 24 hours is invalid",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.StartTimeUnixNano -= uint64(25 * time.Hour)
				return s
			},
		},
		{
			name: "start older than 30 days is invalid",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.StartTimeUnixNano = uint64(now.Add(-31 * 24 * time.Hour).UnixNano())
				s.EndTimeUnixNano = s.StartTimeUnixNano + 1
				return s
			},
		},
		{
			name: "no start time is invalid",
			span: func() *tracepb.Span { s := serverSpan(); s.StartTimeUnixNano = 0; return s },
		},
		{
			name: "start beyond int64 nanoseconds is invalid",
			span: func() *tracepb.Span { s := serverSpan(); s.StartTimeUnixNano = 1 << 63; return s },
		},
		{
			name: "short trace id is malformed",
			span: func() *tracepb.Span { s := serverSpan(); s.TraceId = s.TraceId[:8]; return s },
		},
		{
			name: "all-zero span id is malformed",
			span: func() *tracepb.Span { s := serverSpan(); s.SpanId = make([]byte, 8); return s },
		},
		{
			name: "session id over 128 characters is invalid",
			span: func() *tracepb.Span {
				return withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "t"), kv("mcp.session.id", strings.Repeat("s", 129)))
			},
		},
		{
			name: "error message is kept whole (cut after redaction)",
			span: func() *tracepb.Span {
				s := serverSpan()
				s.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: strings.Repeat("é", 2000)}
				return s
			},
			want: func() analytics.Item {
				it := wantItem()
				it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, "_OTHER", strings.Repeat("é", 2000), "other"
				return it
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, rejected := Map(request(tt.resource, tt.span()), now)
			if tt.want == nil {
				if len(items) != 0 || rejected != 1 {
					t.Fatalf("got %d items, %d rejected; want the span rejected: %+v", len(items), rejected, items)
				}
				return
			}
			if len(items) != 1 || rejected != 0 {
				t.Fatalf("got %d items, %d rejected; want one item", len(items), rejected)
			}
			if want := tt.want(); !reflect.DeepEqual(items[0], want) {
				t.Errorf("item\n got %s\nwant %s", show(items[0]), show(want))
			}
		})
	}
}

func show(it analytics.Item) string {
	d := "<nil>"
	if it.DurationMs != nil {
		d = fmt.Sprint(*it.DurationMs)
	}
	it.DurationMs = nil
	return fmt.Sprintf("duration=%s %+v", d, it)
}

func TestMapNestedSpans(t *testing.T) {
	child := func(kind tracepb.Span_SpanKind, id byte, parent []byte) *tracepb.Span {
		s := serverSpan()
		s.Kind = kind
		s.SpanId = []byte{1, 2, 3, 4, 5, 6, 7, id}
		s.ParentSpanId = parent
		return s
	}
	plain := child(tracepb.Span_SPAN_KIND_SERVER, 9, nil)
	plain.Attributes = []*commonpb.KeyValue{kv("http.route", "/mcp")} // not an MCP span

	tests := []struct {
		name     string
		spans    []*tracepb.Span
		wantIDs  []string
		rejected int
	}{
		{
			name:     "internal MCP span under an MCP server span is the same call",
			spans:    []*tracepb.Span{serverSpan(), child(tracepb.Span_SPAN_KIND_INTERNAL, 1, spanID)},
			wantIDs:  []string{traceHex + spanHex},
			rejected: 1,
		},
		{
			name:     "the nested span is recognised whatever the order",
			spans:    []*tracepb.Span{child(tracepb.Span_SPAN_KIND_UNSPECIFIED, 1, spanID), serverSpan()},
			wantIDs:  []string{traceHex + spanHex},
			rejected: 1,
		},
		{
			name:     "internal MCP span under a non-MCP span counts",
			spans:    []*tracepb.Span{plain, child(tracepb.Span_SPAN_KIND_INTERNAL, 1, plain.SpanId)},
			wantIDs:  []string{traceHex + "0102030405060701"},
			rejected: 1,
		},
		{
			name:    "server span under an MCP span counts",
			spans:   []*tracepb.Span{serverSpan(), child(tracepb.Span_SPAN_KIND_SERVER, 1, spanID)},
			wantIDs: []string{traceHex + spanHex, traceHex + "0102030405060701"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, rejected := Map(request(nil, tt.spans...), now)
			var ids []string
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if !reflect.DeepEqual(ids, tt.wantIDs) || rejected != tt.rejected {
				t.Errorf("got ids %v, %d rejected; want %v, %d", ids, rejected, tt.wantIDs, tt.rejected)
			}
		})
	}
}

func TestMapSeveralResources(t *testing.T) {
	a := request([]*commonpb.KeyValue{kv("service.version", "1.0.0")}, serverSpan(), withAttrs(serverSpan(), kv("db.system", "postgresql")))
	b := request([]*commonpb.KeyValue{kv("service.version", "2.0.0")}, serverSpan())
	b.ResourceSpans[0].ScopeSpans[0].Spans[0].SpanId[7] = 0xff
	a.ResourceSpans = append(a.ResourceSpans, b.ResourceSpans...)

	items, rejected := Map(a, now)
	if rejected != 1 || len(items) != 2 {
		t.Fatalf("got %d items, %d rejected; want 2 and 1", len(items), rejected)
	}
	if items[0].ServerVersion != "1.0.0" || items[1].ServerVersion != "2.0.0" {
		t.Errorf("server versions %q, %q: each span takes its own resource's", items[0].ServerVersion, items[1].ServerVersion)
	}
	if items[0].ID == items[1].ID {
		t.Errorf("distinct spans share the id %q", items[0].ID)
	}
}

func TestMapEmpty(t *testing.T) {
	items, rejected := Map(&coltracepb.ExportTraceServiceRequest{}, now)
	if len(items) != 0 || rejected != 0 {
		t.Errorf("empty request: %d items, %d rejected", len(items), rejected)
	}
}
