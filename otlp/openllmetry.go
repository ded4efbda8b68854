package otlp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpscope/telemetry/analytics"
)

// OpenLLMetry (@traceloop/instrumentation-mcp for Node, and the Python
// opentelemetry-instrumentation-mcp sharing its conventions) does not follow
// the MCP semantic conventions: it wraps the MCP client's and server's
// request method and names spans after the call.
const (
	attrTraceloopKind   = "traceloop.span.kind"
	attrTraceloopName   = "traceloop.entity.name"
	attrTraceloopInput  = "traceloop.entity.input"
	attrTraceloopOutput = "traceloop.entity.output"

	// toolSuffix ends the name of a tools/call span ("<tool>.tool"),
	// methodSuffix that of every other method ("<method>.mcp").
	toolSuffix   = ".tool"
	methodSuffix = ".mcp"
	// sessionSpan is the span of a client's connection, not a call.
	sessionSpan = "mcp.client.session"
)

// openLLMetryScopes are the instrumentation scope names of OpenLLMetry's MCP
// instrumentations (Node, Python). A span of one of them, or one carrying
// traceloop.span.kind, is read under OpenLLMetry's conventions.
var openLLMetryScopes = []string{"@traceloop/instrumentation-mcp", "opentelemetry.instrumentation.mcp"}

// Error types given by the mapping itself, as the semantic conventions spell
// them: a tool result with isError set is a "tool_error".
const toolErrorType = "tool_error"

// isOpenLLMetry reports whether span, from the scope named scope, follows
// OpenLLMetry's conventions rather than the semantic conventions.
func isOpenLLMetry(span *tracepb.Span, scope string) bool {
	if stringAttr(span.GetAttributes(), attrMethod) != "" {
		return false
	}
	if stringAttr(span.GetAttributes(), attrTraceloopKind) != "" {
		return true
	}
	for _, s := range openLLMetryScopes {
		// The Python tracer is named after its module
		// (opentelemetry.instrumentation.mcp.instrumentation).
		if scope == s || strings.HasPrefix(scope, s+".") {
			return true
		}
	}
	return false
}

// openLLMetryMethod returns the MCP method and target of an OpenLLMetry span
// from its name and attributes, or ok false for a span that is not a call
// (mcp.client.session, or a name of neither form).
func openLLMetryMethod(span *tracepb.Span) (method, name string, ok bool) {
	attrs := span.GetAttributes()
	spanName := span.GetName()
	if tool, found := strings.CutSuffix(spanName, toolSuffix); found && tool != "" {
		return analytics.MethodToolsCall, firstNonEmpty(stringAttr(attrs, attrTraceloopName), tool), true
	}
	method, found := strings.CutSuffix(spanName, methodSuffix)
	if !found || method == "" || spanName == sessionSpan {
		return "", "", false
	}
	in := requestParams(jsonAttr(attrs, attrTraceloopInput))
	switch method {
	case "prompts/get":
		name = jsonString(in, "name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		name = jsonString(in, "uri")
	}
	return method, name, true
}

// peerInfo is what the initialize call of a trace tells about both ends:
// clientInfo from its input, serverInfo from its output.
type peerInfo struct{ clientName, clientVersion, serverVersion, protocolVersion string }

// openLLMetryPeers collects, per hex trace id, the clientInfo and serverInfo
// of the request's OpenLLMetry initialize.mcp spans, so every call of that
// client's connection (one trace under the mcp.client.session span) is
// attributed to its client.
func openLLMetryPeers(spans []scopedSpan) map[string]peerInfo {
	var peers map[string]peerInfo
	for _, s := range spans {
		if !isOpenLLMetry(s.span, s.scope) || s.span.GetName() != "initialize"+methodSuffix {
			continue
		}
		in := requestParams(jsonAttr(s.span.GetAttributes(), attrTraceloopInput))
		out := jsonAttr(s.span.GetAttributes(), attrTraceloopOutput)
		client, _ := in["clientInfo"].(map[string]any)
		server, _ := out["serverInfo"].(map[string]any)
		p := peerInfo{clientName: jsonString(client, "name"), clientVersion: jsonString(client, "version"),
			serverVersion:   jsonString(server, "version"),
			protocolVersion: firstNonEmpty(jsonString(out, "protocolVersion"), jsonString(in, "protocolVersion"))}
		if p == (peerInfo{}) {
			continue
		}
		if peers == nil {
			peers = map[string]peerInfo{}
		}
		peers[hex.EncodeToString(s.span.GetTraceId())] = p
	}
	return peers
}

// mapOpenLLMetry builds the item of an OpenLLMetry span, or reports false
// when it is not a call. Both kinds it emits are calls: CLIENT for the
// client's requests, SERVER for the requests the server sends (sampling,
// elicitation, roots). The two spans of one call (a SERVER span whose parent
// is the CLIENT span of the same method) get the same id, so the call is
// counted once however the spans arrive.
func mapOpenLLMetry(span *tracepb.Span, resource []*commonpb.KeyValue, peers map[string]peerInfo, serverParents map[string][]byte) (analytics.Item, bool) {
	method, name, ok := openLLMetryMethod(span)
	if !ok || !validID(span.GetTraceId(), 16) || !validID(span.GetSpanId(), 8) {
		return analytics.Item{}, false
	}
	callSpan := span.GetSpanId()
	switch span.GetKind() {
	case tracepb.Span_SPAN_KIND_CLIENT, tracepb.Span_SPAN_KIND_INTERNAL, tracepb.Span_SPAN_KIND_UNSPECIFIED:
	case tracepb.Span_SPAN_KIND_SERVER:
		if validID(span.GetParentSpanId(), 8) {
			callSpan = span.GetParentSpanId()
		}
	default:
		return analytics.Item{}, false
	}
	if client, ok := serverParents[spanKey(span.GetTraceId(), span.GetParentSpanId())]; ok {
		// A FastMCP server's tool span under its mcp.server span, whose
		// parent is the client's span of the same call: one call.
		callSpan = client
	}
	start := span.GetStartTimeUnixNano()
	if start == 0 || start > 1<<63-1 {
		return analytics.Item{}, false
	}
	attrs := span.GetAttributes()
	traceHex := hex.EncodeToString(span.GetTraceId())
	peer := peers[traceHex]
	it := analytics.Item{
		ID:              traceHex + callID(callSpan, method),
		Timestamp:       time.Unix(0, int64(start)),
		Method:          method,
		Name:            name,
		DurationMs:      durationMs(start, span.GetEndTimeUnixNano()),
		ClientName:      peer.clientName,
		ClientVersion:   peer.clientVersion,
		ServerVersion:   firstNonEmpty(stringAttr(resource, attrServiceVersion), peer.serverVersion),
		ProtocolVersion: firstNonEmpty(stringAttr(attrs, attrProtocolVer), stringAttr(resource, attrProtocolVer), peer.protocolVersion),
		UserID:          firstAttr(resource, attrUserID, attrEndUserID),
		Attributes:      copyAttributes(attrs, resource),
	}
	setError(&it, span)
	if out := jsonAttr(attrs, attrTraceloopOutput); out["is_error"] == true {
		// A tool result with isError: OpenLLMetry sets status ERROR with the
		// result's first text; the conventions call this a tool_error.
		it.Status = analytics.StatusError
		if it.ErrorType == "" || it.ErrorType == fallbackErrorType {
			it.ErrorType = toolErrorType
		}
		if it.ErrorMessage == "" {
			it.ErrorMessage = jsonString(out, "result")
		}
		// Whatever error.type says (an HTTP status name the text held),
		// an isError result is a tool_error unless it is an SDK's answer.
		it.ErrorKind = analytics.DeriveErrorKind(method, toolErrorType, it.ErrorMessage)
	}
	return it, true
}

// callID is the 16 hex characters identifying a call within its trace: a
// hash of the span that started the call and its method, so a SERVER span
// and its CLIENT parent of the same method share it, while a server request
// made inside a client's call (another method) does not.
func callID(spanID []byte, method string) string {
	h := sha256.New()
	h.Write(spanID)
	h.Write([]byte(method))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// requestParams returns the parameters of a request as OpenLLMetry records
// it in traceloop.entity.input: the Node instrumentation writes the params
// themselves, the Python one (other than tools/call) the whole request,
// {"method": ..., "params": {...}}.
func requestParams(in map[string]any) map[string]any {
	if p, ok := in["params"].(map[string]any); ok {
		if _, hasMethod := in["method"]; hasMethod {
			return p
		}
	}
	return in
}

// openLLMetryServerParents maps the key of each OpenLLMetry "mcp.server"
// span in the request (traceloop.span.kind "server": the Python
// instrumentation's span around a FastMCP server's tool execution) to its
// parent's span id, the client's span of the same call when the client's
// trace context reached the server.
func openLLMetryServerParents(spans []scopedSpan) map[string][]byte {
	var parents map[string][]byte
	for _, s := range spans {
		if s.span.GetName() != "mcp.server" || stringAttr(s.span.GetAttributes(), attrTraceloopKind) != "server" ||
			!validID(s.span.GetParentSpanId(), 8) {
			continue
		}
		if parents == nil {
			parents = map[string][]byte{}
		}
		parents[spanKey(s.span.GetTraceId(), s.span.GetSpanId())] = s.span.GetParentSpanId()
	}
	return parents
}

// jsonAttr decodes a string attribute holding a JSON object (OpenLLMetry's
// entity input and output); nil when absent or not an object.
func jsonAttr(attrs []*commonpb.KeyValue, key string) map[string]any {
	s := stringAttr(attrs, key)
	if s == "" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}

func jsonString(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
