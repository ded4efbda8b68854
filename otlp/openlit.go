package otlp

import (
	"encoding/hex"
	"math"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpscope/telemetry/analytics"
)

// OpenLIT's MCP instrumentation (openlit/openlit, sdk/python, package
// openlit.instrumentation.mcp) wraps the MCP Python SDK's
// BaseSession.send_request: one span per request a session sends, named
// "mcp <method>", of the default kind, with its own attribute names
// (openlit.semcov: mcp.method, mcp.system = "mcp"). The tool, prompt or
// resource is only in the request payload it records (mcp.request.payload,
// the request's JSON), which it writes unless content capture is off.
const (
	attrOpenLITMethod  = "mcp.method"
	attrOpenLITSystem  = "mcp.system"
	attrOpenLITRequest = "mcp.request.payload"
)

// isOpenLIT reports whether span follows OpenLIT's conventions: mcp.system
// "mcp" with an mcp.method, and no mcp.method.name (which would make it a
// span of the semantic conventions).
func isOpenLIT(span *tracepb.Span) bool {
	attrs := span.GetAttributes()
	return stringAttr(attrs, attrMethod) == "" && stringAttr(attrs, attrOpenLITSystem) == "mcp" &&
		stringAttr(attrs, attrOpenLITMethod) != ""
}

// mapOpenLIT builds the item of an OpenLIT span. Its spans describe the
// requests the instrumented process sends: a client's calls to the MCP
// server (the calls this MCP handled) and a server's requests to its client
// (sampling, elicitation, roots); both are calls, as with OpenLLMetry.
func mapOpenLIT(span *tracepb.Span, resource []*commonpb.KeyValue) (analytics.Item, bool) {
	attrs := span.GetAttributes()
	method := stringAttr(attrs, attrOpenLITMethod)
	if !validID(span.GetTraceId(), 16) || !validID(span.GetSpanId(), 8) {
		return analytics.Item{}, false
	}
	switch span.GetKind() {
	case tracepb.Span_SPAN_KIND_INTERNAL, tracepb.Span_SPAN_KIND_UNSPECIFIED, tracepb.Span_SPAN_KIND_CLIENT:
	default:
		return analytics.Item{}, false
	}
	start := span.GetStartTimeUnixNano()
	if start == 0 || start > math.MaxInt64 {
		return analytics.Item{}, false
	}
	req := jsonAttr(attrs, attrOpenLITRequest)
	if root, ok := req["root"].(map[string]any); ok {
		req = root
	}
	params, _ := req["params"].(map[string]any)
	var name string
	switch method {
	case analytics.MethodToolsCall, "prompts/get":
		name = jsonString(params, "name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		name = jsonString(params, "uri")
	}
	traceHex := hex.EncodeToString(span.GetTraceId())
	it := analytics.Item{
		ID:              traceHex + hex.EncodeToString(span.GetSpanId()),
		Timestamp:       time.Unix(0, int64(start)),
		Method:          method,
		Name:            name,
		DurationMs:      durationMs(start, span.GetEndTimeUnixNano()),
		ServerVersion:   stringAttr(resource, attrServiceVersion),
		ProtocolVersion: firstNonEmpty(stringAttr(attrs, attrProtocolVer), stringAttr(resource, attrProtocolVer)),
		UserID:          firstAttr(resource, attrUserID, attrEndUserID),
		Attributes:      copyAttributes(attrs, resource),
	}
	setError(&it, span)
	if it.Status == analytics.StatusError && it.ErrorType == fallbackErrorType && method == analytics.MethodToolsCall {
		// A tool result with isError: OpenLIT sets status ERROR with the
		// result's first text, and neither error.type nor an exception.
		it.ErrorType = toolErrorType
	}
	return it, true
}
