package otlp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpscope/telemetry/analytics"
)

// Attributes that carry a call's arguments or result (MAPPING.md, "Error
// kinds, answer sizes and arguments").
const (
	// attrToolArguments and attrToolResult are the conventions' opt-in
	// records of a tool call's arguments and result, as JSON (the AWS
	// distro records both).
	attrToolArguments = "gen_ai.tool.call.arguments"
	attrToolResult    = "gen_ai.tool.call.result"
	// attrShinzoArgPrefix starts Shinzo's one attribute per argument,
	// mcp.tool.argument.<name>.
	attrShinzoArgPrefix = "mcp.tool.argument."
)

// argsHashDomain separates the service's hash of OTLP arguments from any
// other SHA-256 of the same bytes.
const argsHashDomain = "mcpscope otlp args_hash v1\x00"

// argsHashLen is the length of an args_hash, in hex characters (128 bits).
const argsHashLen = 32

// fillFailure completes a mapped item with what its span carries beyond the
// call itself: the error kind of a failed item that has none yet (derived
// from the JSON-RPC code, error.type and message), the size of the result
// the span recorded, and a hash of the arguments it recorded.
func fillFailure(it *analytics.Item, span *tracepb.Span) {
	attrs := span.GetAttributes()
	if it.Status == analytics.StatusError && it.ErrorKind == "" {
		typ := it.ErrorType
		if code := stringAttr(attrs, attrRPCStatusCode); strings.HasPrefix(code, "-32") {
			// The AWS distro's error.type is the class (McpError); the
			// code says more.
			typ = code
		}
		it.ErrorKind = analytics.DeriveErrorKind(it.Method, typ, it.ErrorMessage)
	}
	if r := stringAttr(attrs, attrToolResult); r != "" && it.ResponseBytes == nil {
		n := int64(len(r))
		it.ResponseBytes = &n
	}
	if it.Method == analytics.MethodToolsCall && it.ArgsHash == "" {
		if args, ok := spanArguments(attrs); ok {
			it.ArgsHash = argsHash(args)
		}
	}
}

// spanArguments returns the tool call arguments a span recorded, by
// emitter: the conventions' gen_ai.tool.call.arguments, OpenLLMetry's
// traceloop.entity.input, OpenLIT's mcp.request.payload, Shinzo's
// mcp.tool.argument.* attributes.
func spanArguments(attrs []*commonpb.KeyValue) (any, bool) {
	if s := stringAttr(attrs, attrToolArguments); s != "" {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			return v, true
		}
	}
	if in := jsonAttr(attrs, attrTraceloopInput); in != nil {
		if a, ok := requestParams(in)["arguments"]; ok {
			return a, true
		}
	}
	if req := jsonAttr(attrs, attrOpenLITRequest); req != nil {
		if root, ok := req["root"].(map[string]any); ok {
			req = root
		}
		if p, ok := req["params"].(map[string]any); ok {
			if a, ok := p["arguments"]; ok {
				return a, true
			}
		}
	}
	var shinzo map[string]any
	for _, kv := range attrs {
		if k, ok := strings.CutPrefix(kv.GetKey(), attrShinzoArgPrefix); ok {
			if shinzo == nil {
				shinzo = map[string]any{}
			}
			shinzo[k] = stringAttr(attrs, kv.GetKey())
		}
	}
	return shinzo, shinzo != nil
}

// argsHash is the args_hash of arguments an emitter sent in clear: the
// SHA-256 of a domain prefix and the arguments' canonical JSON (keys
// sorted, no whitespace, no HTML escaping), its first argsHashLen hex
// characters. The service keeps only this, never the arguments.
func argsHash(args any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if args == nil {
		args = map[string]any{}
	}
	if e.Encode(args) != nil { // maps encode with sorted keys
		return ""
	}
	h := sha256.New()
	h.Write([]byte(argsHashDomain))
	h.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return hex.EncodeToString(h.Sum(nil))[:argsHashLen]
}
