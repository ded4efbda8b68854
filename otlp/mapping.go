package otlp

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpscope/telemetry/analytics"
)

// Attribute names read from spans and resources. The gen_ai.* names are the
// current conventions (semconv v1.39+); mcp.tool.name and mcp.prompt.name are
// their predecessors in earlier drafts, still emitted by some
// instrumentations.
const (
	attrMethod      = "mcp.method.name"
	attrToolName    = "gen_ai.tool.name"
	attrOldToolName = "mcp.tool.name"
	attrPromptName  = "gen_ai.prompt.name"
	// attrAWSPromptName is where the AWS distro's MCP instrumentor puts a
	// prompts/get span's prompt name (the semconv constant GEN_AI_PROMPT).
	attrAWSPromptName  = "gen_ai.prompt"
	attrOldPromptName  = "mcp.prompt.name"
	attrResourceURI    = "mcp.resource.uri"
	attrSessionID      = "mcp.session.id"
	attrProtocolVer    = "mcp.protocol.version"
	attrErrorType      = "error.type"
	attrRPCStatusCode  = "rpc.response.status_code"
	attrClientName     = "mcp.client.name"
	attrClientVersion  = "mcp.client.version"
	attrUserID         = "user.id"
	attrEndUserID      = "enduser.id"
	attrServiceVersion = "service.version"

	// Sentry's MCP server integration: the server's own version (from its
	// serverInfo) and the isError flag of a tool result.
	attrSentryServerVersion = "mcp.server.version"
	attrSentryToolIsError   = "mcp.tool.result.is_error"

	exceptionEvent   = "exception"
	attrExceptionTyp = "exception.type"
	attrExceptionMsg = "exception.message"
)

// fallbackErrorType is the error_type of a failed span that names no error
// class. It is the conventions' own fallback value for error.type.
const fallbackErrorType = "_OTHER"

// maxAttributeValue bounds a copied attribute value; longer values are not
// copied, so an item's attributes stay small whatever the exporter sends.
const maxAttributeValue = 256

// attributeKeys are the span and resource attributes copied into an item's
// attributes: low-cardinality context worth filtering on, far below the
// 32-pair limit of an item. Span values win over resource values.
var attributeKeys = struct{ span, resource []string }{
	span: []string{
		attrProtocolVer, "network.transport", "network.protocol.name",
		attrRPCStatusCode, "gen_ai.operation.name", "mcp.transport", "mcp.server.name",
	},
	resource: []string{
		"service.name", "service.namespace", "service.instance.id",
		"deployment.environment.name", "deployment.environment",
		"telemetry.sdk.language",
	},
}

// Map turns the MCP server spans of an export request into ingest items, in
// request order, with now as the reference time of item validation. Every
// other span (not MCP, client-side, nested, malformed or failing an item
// rule) is counted in rejected. The mapping is described in the package
// comment and MAPPING.md.
func Map(req *coltracepb.ExportTraceServiceRequest, now time.Time) (items []analytics.Item, rejected int) {
	items, rejected, _ = MapWithResources(req, now)
	return items, rejected
}

// MapWithResources is Map, and also lists the ResourceKeys of the resources
// whose spans became items: the emitters whose metric points the metrics
// path skips (spans win, MAPPING.md "Metrics").
func MapWithResources(req *coltracepb.ExportTraceServiceRequest, now time.Time) (items []analytics.Item, rejected int, resources []string) {
	spans := flatten(req)
	mcpSpans := mcpSpanIDs(spans)
	peers, serverParents := openLLMetryPeers(spans), openLLMetryServerParents(spans)
	seen := map[string]bool{}
	resSeen := map[int]bool{}
	for _, s := range spans {
		var it analytics.Item
		var ok bool
		switch {
		case isOpenLLMetry(s.span, s.scope):
			it, ok = mapOpenLLMetry(s.span, s.resource, peers, serverParents)
		case isOpenLIT(s.span):
			it, ok = mapOpenLIT(s.span, s.resource)
		default:
			it, ok = mapSpan(s.span, s.resource, mcpSpans)
		}
		if ok && isNotification(it.Method) {
			ok = false // not a request: never a call
		}
		if ok {
			fillFailure(&it, s.span)
			it.Normalize()
			ok = it.Validate(now) && !seen[it.ID]
		}
		if !ok {
			rejected++
			continue
		}
		seen[it.ID] = true
		items = append(items, it)
		if !resSeen[s.rs] {
			resSeen[s.rs] = true
			resources = append(resources, ResourceKey(s.resource))
		}
	}
	return items, rejected, resources
}

// scopedSpan is a span with the resource attributes and instrumentation
// scope name it came under.
type scopedSpan struct {
	span     *tracepb.Span
	resource []*commonpb.KeyValue
	scope    string
	rs       int // index of its ResourceSpans
}

// flatten lists the spans of a request in request order.
func flatten(req *coltracepb.ExportTraceServiceRequest) []scopedSpan {
	var out []scopedSpan
	for i, rs := range req.GetResourceSpans() {
		resource := rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			for _, span := range ss.GetSpans() {
				out = append(out, scopedSpan{span: span, resource: resource, scope: ss.GetScope().GetName(), rs: i})
			}
		}
	}
	return out
}

// spanKey identifies a span across a request: hex trace id + hex span id,
// which is also the item id.
func spanKey(traceID, spanID []byte) string {
	return hex.EncodeToString(traceID) + hex.EncodeToString(spanID)
}

// mcpSpanIDs collects the keys of the request's spans carrying
// mcp.method.name, to recognise MCP spans nested in MCP spans.
func mcpSpanIDs(spans []scopedSpan) map[string]bool {
	ids := map[string]bool{}
	for _, s := range spans {
		if stringAttr(s.span.GetAttributes(), attrMethod) != "" {
			ids[spanKey(s.span.GetTraceId(), s.span.GetSpanId())] = true
		}
	}
	return ids
}

// mapSpan builds the item of one span, or reports false when the span is not
// an MCP server call. The item still has to pass Normalize and Validate.
func mapSpan(span *tracepb.Span, resource []*commonpb.KeyValue, mcpSpans map[string]bool) (analytics.Item, bool) {
	attrs := span.GetAttributes()
	method := stringAttr(attrs, attrMethod)
	if method == "" || !validID(span.GetTraceId(), 16) || !validID(span.GetSpanId(), 8) {
		return analytics.Item{}, false
	}
	switch span.GetKind() {
	case tracepb.Span_SPAN_KIND_SERVER:
	case tracepb.Span_SPAN_KIND_INTERNAL, tracepb.Span_SPAN_KIND_UNSPECIFIED:
		if len(span.GetParentSpanId()) > 0 && mcpSpans[spanKey(span.GetTraceId(), span.GetParentSpanId())] {
			return analytics.Item{}, false
		}
	default:
		return analytics.Item{}, false
	}
	start := span.GetStartTimeUnixNano()
	if start == 0 || start > math.MaxInt64 {
		return analytics.Item{}, false
	}
	traceHex := hex.EncodeToString(span.GetTraceId())
	it := analytics.Item{
		ID:              traceHex + hex.EncodeToString(span.GetSpanId()),
		Timestamp:       time.Unix(0, int64(start)),
		SessionID:       firstNonEmpty(stringAttr(attrs, attrSessionID), stringAttr(resource, attrSessionID)),
		Method:          method,
		Name:            firstAttr(attrs, attrToolName, attrOldToolName, attrPromptName, attrOldPromptName, attrResourceURI),
		DurationMs:      durationMs(start, span.GetEndTimeUnixNano()),
		ClientName:      stringAttr(attrs, attrClientName),
		ClientVersion:   stringAttr(attrs, attrClientVersion),
		ServerVersion:   firstNonEmpty(stringAttr(resource, attrServiceVersion), stringAttr(attrs, attrSentryServerVersion)),
		ProtocolVersion: firstNonEmpty(stringAttr(attrs, attrProtocolVer), stringAttr(resource, attrProtocolVer)),
		UserID:          firstAttr(attrs, attrUserID, attrEndUserID),
		Attributes:      copyAttributes(attrs, resource),
	}
	// Without mcp.session.id the item has no session_id: the service
	// derives its session like any item sent without one (docs/sessions.md).
	if it.Name == "" && method == "prompts/get" {
		if p := stringAttr(attrs, attrAWSPromptName); utf8.RuneCountInString(p) <= analytics.MaxNameLen {
			it.Name = p
		}
	}
	if it.Name == "" && (method == analytics.MethodToolsCall || method == "prompts/get") {
		// Span names are "{mcp.method.name} {target}", the target being the
		// tool or prompt name; the AWS distro prefixes them with "mcp ".
		name := strings.TrimPrefix(span.GetName(), "mcp ")
		if target, ok := strings.CutPrefix(name, method+" "); ok {
			it.Name = target
		}
	}
	if it.UserID == "" {
		it.UserID = firstAttr(resource, attrUserID, attrEndUserID)
	}
	setError(&it, span)
	if it.Status != analytics.StatusError && stringAttr(attrs, attrSentryToolIsError) == "true" {
		// Sentry's MCP integration marks a tool result with isError so and
		// leaves the span status OK.
		it.Status, it.ErrorType = analytics.StatusError, toolErrorType
	}
	return it, true
}

// isNotification reports whether method is an MCP notification
// (notifications/initialized, notifications/cancelled, ...): a message
// without an answer, which some instrumentations trace like a request (the
// Python SDK's and the AWS distro's SERVER spans) but which is not a call.
func isNotification(method string) bool {
	return strings.HasPrefix(method, "notifications/")
}

// setError marks the item failed when the span's status is ERROR or it
// carries error.type (the conventions set both together, but either alone is
// taken as a failure).
func setError(it *analytics.Item, span *tracepb.Span) {
	attrs := span.GetAttributes()
	errType := stringAttr(attrs, attrErrorType)
	if errType == "" && span.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		return
	}
	var excType, excMsg string
	for _, ev := range span.GetEvents() {
		if ev.GetName() == exceptionEvent {
			excType = stringAttr(ev.GetAttributes(), attrExceptionTyp)
			excMsg = stringAttr(ev.GetAttributes(), attrExceptionMsg)
			break
		}
	}
	it.Status = analytics.StatusError
	it.ErrorType = firstNonEmpty(errType, stringAttr(attrs, attrRPCStatusCode), excType, fallbackErrorType)
	it.ErrorMessage = firstNonEmpty(span.GetStatus().GetMessage(), excMsg)
}

// durationMs is end minus start in milliseconds, nil (not measured) when the
// span has no end or ends before it starts.
func durationMs(start, end uint64) *float64 {
	if end == 0 || end < start {
		return nil
	}
	ms := float64(end-start) / 1e6
	return &ms
}

// validID reports whether id has the size OTLP requires and is not all
// zeros, which the spec calls invalid.
func validID(id []byte, size int) bool {
	if len(id) != size {
		return false
	}
	for _, b := range id {
		if b != 0 {
			return true
		}
	}
	return false
}

func copyAttributes(span, resource []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	add := func(attrs []*commonpb.KeyValue, keys []string) {
		for _, k := range keys {
			if _, done := out[k]; done {
				continue
			}
			if v := stringAttr(attrs, k); v != "" && utf8.RuneCountInString(v) <= maxAttributeValue {
				out[k] = v
			}
		}
	}
	add(span, attributeKeys.span)
	add(resource, attributeKeys.resource)
	if len(out) == 0 {
		return nil
	}
	return out
}

// stringAttr returns the value of the attribute key as text: strings as they
// are, and integers, doubles and booleans formatted, since some
// instrumentations record ids (user.id, rpc.response.status_code) as numbers.
// It is "" when the key is absent or holds an array, map or bytes.
func stringAttr(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.GetKey() != key {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			return strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
		case *commonpb.AnyValue_BoolValue:
			return strconv.FormatBool(v.BoolValue)
		}
		return ""
	}
	return ""
}

func firstAttr(attrs []*commonpb.KeyValue, keys ...string) string {
	for _, k := range keys {
		if v := stringAttr(attrs, k); v != "" {
			return v
		}
	}
	return ""
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
