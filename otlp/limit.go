package otlp

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/jsoncount"
)

// MaxSpansPerRequest bounds the spans one export request may carry. OTLP
// exporters send 512 spans a batch by default; a body with more is refused
// with 413 too_many_items before any span is decoded, so that a small body
// of empty spans cannot cost hundreds of megabytes.
const MaxSpansPerRequest = 10_000

// spansPath is where OTLP/JSON keeps spans (JSON and proto field names).
var spansPath = []string{"resourceSpans|resource_spans", jsoncount.Wildcard,
	"scopeSpans|scope_spans", jsoncount.Wildcard, "spans"}

// CheckSpanCount refuses a body holding more than MaxSpansPerRequest spans,
// counting them without decoding. Malformed or truncated input passes (the
// decoder reports it), so it can judge a prefix of a body as it inflates.
func CheckSpanCount(body []byte, mediaType string) error {
	var over bool
	if mediaType == ContentTypeProtobuf {
		over = protoSpanCount(body, MaxSpansPerRequest) > MaxSpansPerRequest
	} else {
		_, over = jsoncount.AtPath(body, spansPath, MaxSpansPerRequest)
	}
	if over {
		return telemetry.Errorf(telemetry.ETOOMANYITEMS,
			"An export request holds at most %d spans; this one has more. Lower the exporter's batch size.", MaxSpansPerRequest)
	}
	return nil
}

// Field numbers of the trace export request on the path to its spans:
// ExportTraceServiceRequest.resource_spans = 1, ResourceSpans.scope_spans
// = 2, ScopeSpans.spans = 2.
const (
	fieldResourceSpans = 1
	fieldScopeSpans    = 2
	fieldSpans         = 2
)

// protoSpanCount counts the spans of a protobuf export request by walking
// its wire format, stopping once the count passes limit.
func protoSpanCount(b []byte, limit int) int {
	n := 0
	forEachMessage(b, fieldResourceSpans, func(rs []byte) bool {
		forEachMessage(rs, fieldScopeSpans, func(ss []byte) bool {
			forEachMessage(ss, fieldSpans, func([]byte) bool {
				n++
				return n <= limit
			})
			return n <= limit
		})
		return n <= limit
	})
	return n
}

// forEachMessage calls fn with each length-delimited field num of message
// b, until fn returns false or the input is malformed; it reports false when
// b is not a well-formed protobuf message.
func forEachMessage(b []byte, num protowire.Number, fn func([]byte) bool) (wellFormed bool) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return false
			}
			b = b[l:]
			if !fn(v) {
				return true
			}
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return false
		}
		b = b[l:]
	}
	return true
}
