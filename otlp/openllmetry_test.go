package otlp

import (
	"reflect"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpscope/telemetry/analytics"
)

// traceloopSpan is an OpenLLMetry span as @traceloop/instrumentation-mcp
// 0.27.0 emits it: named after the call, CLIENT for the client's requests,
// lasting 182.5 ms.
func traceloopSpan(name string, id byte, kind tracepb.Span_SpanKind, attrs ...*commonpb.KeyValue) *tracepb.Span {
	sp := serverSpan()
	sp.Name, sp.Kind, sp.Attributes = name, kind, attrs
	sp.SpanId = []byte{0, 0, 0, 0, 0, 0, 0, id}
	return sp
}

func traceloopRequest(spans ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	req := request([]*commonpb.KeyValue{kv("service.name", "agent")}, spans...)
	req.ResourceSpans[0].ScopeSpans[0].Scope = &commonpb.InstrumentationScope{Name: "@traceloop/instrumentation-mcp", Version: "0.27.0"}
	return req
}

func TestMapOpenLLMetry(t *testing.T) {
	client := tracepb.Span_SPAN_KIND_CLIENT
	initialize := traceloopSpan("initialize.mcp", 1, client,
		kv("traceloop.entity.input", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.0"}}`),
		kv("traceloop.entity.output", `{"protocolVersion":"2025-06-18","serverInfo":{"name":"docs","version":"1.4.2"}}`))
	tool := traceloopSpan("search_docs.tool", 2, client, kv("traceloop.span.kind", "tool"), kv("traceloop.entity.name", "search_docs"),
		kv("traceloop.entity.input", `{"tool_name":"search_docs","arguments":{"q":"secret"}}`),
		kv("traceloop.entity.output", `{"result":"found"}`))
	toolErr := traceloopSpan("search_docs.tool", 3, client, kv("traceloop.span.kind", "tool"), kv("traceloop.entity.name", "search_docs"),
		kv("traceloop.entity.output", `{"result":"index offline","is_error":true}`))
	toolErr.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "index offline"}
	rpcErr := traceloopSpan("resources/read.mcp", 4, client, kv("traceloop.entity.input", `{"uri":"file:///missing"}`))
	rpcErr.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "MCP error -32002: Resource not found"}
	rpcErr.Events = []*tracepb.Span_Event{{Name: "exception", Attributes: []*commonpb.KeyValue{kv("exception.type", "-32002"), kv("exception.message", "MCP error -32002: Resource not found")}}}
	prompt := traceloopSpan("prompts/get.mcp", 5, client, kv("traceloop.entity.input", `{"name":"review"}`))
	session := traceloopSpan("mcp.client.session", 6, client, kv("traceloop.span.kind", "session"), kv("traceloop.entity.name", "mcp.client.session"))
	// A server-initiated request made while handling the tool call: its
	// parent is the tool's CLIENT span, but its method differs, so it is a
	// call of its own.
	sampling := traceloopSpan("sampling/createMessage.mcp", 7, tracepb.Span_SPAN_KIND_SERVER)
	sampling.ParentSpanId = tool.SpanId
	// The server side of the tool call itself (Python's instrumentation, or
	// a server wrapping its request handling): same call, counted once.
	toolServer := traceloopSpan("search_docs.tool", 8, tracepb.Span_SPAN_KIND_SERVER, kv("traceloop.span.kind", "tool"), kv("traceloop.entity.name", "search_docs"))
	toolServer.ParentSpanId = tool.SpanId

	items, rejected := Map(traceloopRequest(initialize, tool, toolErr, rpcErr, prompt, session, sampling, toolServer), now)
	if rejected != 2 {
		t.Errorf("rejected = %d, want 2 (the session span and the server side of a counted call)", rejected)
	}
	base := func(id byte, method, name string) analytics.Item {
		return analytics.Item{
			ID: traceHex + callID([]byte{0, 0, 0, 0, 0, 0, 0, id}, method), Timestamp: start,
			Method: method, Name: name, DurationMs: ptr(182.5), Status: analytics.StatusOK,
			ClientName: "claude-code", ClientVersion: "2.1.0", ServerVersion: "1.4.2", ProtocolVersion: "2025-06-18",
			Attributes: map[string]string{"service.name": "agent"},
		}
	}
	want := []analytics.Item{
		base(1, "initialize", ""),
		func() analytics.Item {
			it := base(2, "tools/call", "search_docs")
			it.ArgsHash = argsHash(map[string]any{"q": "secret"}) // never the arguments themselves
			return it
		}(),
		func() analytics.Item {
			it := base(3, "tools/call", "search_docs")
			it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, "tool_error", "index offline", "tool_error"
			return it
		}(),
		func() analytics.Item {
			it := base(4, "resources/read", "file:///missing")
			it.Status, it.ErrorType, it.ErrorMessage, it.ErrorKind = analytics.StatusError, "-32002", "MCP error -32002: Resource not found", "unknown_tool"
			return it
		}(),
		base(5, "prompts/get", "review"),
		// A SERVER span is identified by its parent (the call that caused
		// it) and its method.
		base(2, "sampling/createMessage", ""),
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items, want %d: %+v", len(items), len(want), items)
	}
	for i := range want {
		if !reflect.DeepEqual(items[i], want[i]) {
			t.Errorf("item %d:\n got %+v\nwant %+v", i, items[i], want[i])
		}
	}
	// Across export requests the pair shares its id, so the ingest
	// duplicate filter keeps one.
	alone, _ := Map(traceloopRequest(toolServer), now)
	if len(alone) != 1 || alone[0].ID != want[1].ID {
		t.Errorf("server side alone: %+v, want id %s", alone, want[1].ID)
	}
}

func TestMapOpenLLMetryByAttributeWithoutScope(t *testing.T) {
	sp := traceloopSpan("lookup.tool", 9, tracepb.Span_SPAN_KIND_CLIENT, kv("traceloop.span.kind", "tool"), kv("traceloop.entity.name", "lookup"))
	items, rejected := Map(request(nil, sp), now)
	if rejected != 0 || len(items) != 1 || items[0].Method != "tools/call" || items[0].Name != "lookup" {
		t.Fatalf("items %+v rejected %d", items, rejected)
	}
	// A span of another library named like a call is not OpenLLMetry's.
	other := traceloopSpan("lookup.tool", 9, tracepb.Span_SPAN_KIND_CLIENT)
	if items, rejected := Map(request(nil, other), now); len(items) != 0 || rejected != 1 {
		t.Fatalf("unmarked span: items %+v rejected %d", items, rejected)
	}
}

func TestMapSentryAttributes(t *testing.T) {
	sp := withAttrs(serverSpan(), kv("mcp.method.name", "tools/call"), kv("mcp.tool.name", "search_docs"), kv("mcp.session.id", "s-81"),
		kv("mcp.server.version", "3.0.1"), kv("mcp.tool.result.is_error", true), kv("mcp.transport", "stdio"))
	items, rejected := Map(request(nil, sp), now)
	if rejected != 0 || len(items) != 1 {
		t.Fatalf("items %+v rejected %d", items, rejected)
	}
	want := wantItem()
	want.ServerVersion, want.Status, want.ErrorType, want.ErrorKind = "3.0.1", analytics.StatusError, "tool_error", "tool_error"
	want.Attributes = map[string]string{"mcp.transport": "stdio"}
	if !reflect.DeepEqual(items[0], want) {
		t.Errorf("got %+v\nwant %+v", items[0], want)
	}
	// The semconv error.type values are kept as sent.
	for _, et := range []string{"tool_error", "-32602"} {
		sp := serverSpan()
		sp.Attributes = append(sp.Attributes, kv("error.type", et))
		items, _ := Map(request(nil, sp), now)
		if len(items) != 1 || items[0].ErrorType != et || items[0].Status != analytics.StatusError {
			t.Errorf("error.type %q: %+v", et, items)
		}
	}
}
