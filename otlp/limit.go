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

// Decoding a body builds a Go value for each element it holds (a span, an
// event, a link, an attribute, an array value, ...), whatever the element
// weighs on the wire: 350,000 empty events are 700 bytes of protobuf
// (about 1 KB gzipped) and 53 MiB decoded. CheckDecodeCost counts the
// elements on the wire before anything is decoded and prices them, so a
// request's decoding is reserved against the service's decode budget at
// what it will cost, and refused when it would cost more than
// MaxDecodeBytes (docs/limits.md).
const (
	// MaxDecodeBytes bounds the memory decoding one request may take (the
	// service's decode budget is 32 MiB by default).
	MaxDecodeBytes = 32 << 20
	// protoElementBytes and jsonValueBytes are what one element (protobuf)
	// or one JSON value (OTLP/JSON: a generic decode, then the protobuf
	// one) takes decoded, and jsonBodyCopies the copies of its bytes
	// OTLP/JSON decoding makes, measured on empty events (the cheapest
	// elements to send) and typical spans (TestDecodeCostCoversDecoding).
	protoElementBytes = 160
	jsonValueBytes    = 320
	jsonBodyCopies    = 8
	// maxAnyValueDepth bounds the nesting of array and kvlist values the
	// count walks; deeper is refused.
	maxAnyValueDepth = 64
)

// CheckDecodeCost returns the memory decoding body will take (its own
// bytes and its priced elements), or ETOOLARGE when that is over
// MaxDecodeBytes. Malformed input is priced as far as it is well formed
// (the decoder then reports it).
func CheckDecodeCost(body []byte, mediaType string) (int64, error) {
	return checkDecodeCost(body, mediaType, exportRequestSchema, "spans, events, links or attributes")
}

// CheckMetricsDecodeCost is CheckDecodeCost for a metrics export body: its
// metrics, data points, exemplars and attributes are the elements, and its
// repeated numbers (bucket counts and bounds) are priced at 8 bytes a wire
// byte, what a packed varint becomes decoded.
func CheckMetricsDecodeCost(body []byte, mediaType string) (int64, error) {
	return checkDecodeCost(body, mediaType, metricsRequestSchema, "metrics, data points, buckets or attributes")
}

func checkDecodeCost(body []byte, mediaType string, s *schema, what string) (int64, error) {
	var cost, per int64
	if mediaType == ContentTypeProtobuf {
		per = protoElementBytes
		cost = int64(len(body))
		w := elementWalker{limit: int(max(0, MaxDecodeBytes-cost) / per)}
		w.walk(body, s, 0)
		cost += int64(w.n) * per
	} else {
		per = jsonValueBytes
		cost = jsonBodyCopies * int64(len(body))
		n, _ := jsoncount.Values(body, int(max(0, MaxDecodeBytes-cost)/per))
		cost += int64(n) * per
	}
	if cost > MaxDecodeBytes {
		return cost, telemetry.Errorf(telemetry.ETOOLARGE,
			"This export request would take more than %d MiB to decode: it holds too many %s "+
				"(about %d bytes each decoded). Lower the exporter's batch size.", MaxDecodeBytes>>20, what, per)
	}
	return cost, nil
}

// schema names the message-typed fields of a protobuf message whose
// occurrences the walk counts, and the schema to walk each with (nil:
// count, do not descend: a repeated string).
type schema map[protowire.Number]*schema

var (
	anyValueSchema   = schema{}
	keyValueSchema   = schema{2: &anyValueSchema}
	attributes       = &keyValueSchema
	arrayValueSchema = schema{1: &anyValueSchema}
	kvListSchema     = schema{1: attributes}
	leaf             *schema

	entityRefSchema = schema{3: leaf, 4: leaf} // id_keys, description_keys
	resourceSchema  = schema{1: attributes, 3: &entityRefSchema}
	scopeSchema     = schema{3: attributes}
	eventSchema     = schema{3: attributes}
	linkSchema      = schema{4: attributes}
	statusSchema    = schema{}
	// Span: attributes 9, events 11, links 13, status 15.
	spanSchema          = schema{9: attributes, 11: &eventSchema, 13: &linkSchema, 15: &statusSchema}
	scopeSpansSchema    = schema{1: &scopeSchema, fieldSpans: &spanSchema}
	resourceSpansSchema = schema{1: &resourceSchema, fieldScopeSpans: &scopeSpansSchema}
	exportRequestSchema = &schema{fieldResourceSpans: &resourceSpansSchema}

	// Metrics. numbers marks a repeated numeric field: priced by its
	// bytes, not counted as an element.
	numbers        = &schema{}
	exemplarSchema = schema{7: attributes}
	// NumberDataPoint: attributes 7, exemplars 5. HistogramDataPoint:
	// attributes 9, bucket_counts 6, explicit_bounds 7, exemplars 8.
	// ExponentialHistogramDataPoint: attributes 1, positive 8, negative 9,
	// exemplars 11; its Buckets: bucket_counts 2. SummaryDataPoint:
	// attributes 7, quantile_values 6.
	numberPointSchema     = schema{7: attributes, 5: &exemplarSchema}
	histPointSchema       = schema{9: attributes, 6: numbers, 7: numbers, 8: &exemplarSchema}
	expBucketsSchema      = schema{2: numbers}
	expPointSchema        = schema{1: attributes, 8: &expBucketsSchema, 9: &expBucketsSchema, 11: &exemplarSchema}
	quantileSchema        = schema{}
	summaryPointSchema    = schema{7: attributes, 6: &quantileSchema}
	gaugeSchema           = schema{1: &numberPointSchema}
	histSchema            = schema{1: &histPointSchema}
	expHistSchema         = schema{1: &expPointSchema}
	summarySchema         = schema{1: &summaryPointSchema}
	metricSchema          = schema{5: &gaugeSchema, 7: &gaugeSchema, 9: &histSchema, 10: &expHistSchema, 11: &summarySchema, 12: attributes}
	scopeMetricsSchema    = schema{1: &scopeSchema, 2: &metricSchema}
	resourceMetricsSchema = schema{1: &resourceSchema, 2: &scopeMetricsSchema}
	metricsRequestSchema  = &schema{1: &resourceMetricsSchema}
)

func init() {
	// AnyValue: array_value 5, kvlist_value 6 (set here: the schemas refer
	// to each other).
	anyValueSchema[5] = &arrayValueSchema
	anyValueSchema[6] = &kvListSchema
}

// elementWalker counts the message-typed fields of a protobuf body, every
// level down, stopping once the count passes limit.
type elementWalker struct {
	n, limit int
}

func (w *elementWalker) walk(b []byte, s *schema, depth int) {
	if depth > maxAnyValueDepth {
		w.n = w.limit + 1
		return
	}
	for len(b) > 0 && w.n <= w.limit {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return
		}
		b = b[l:]
		child, known := (*s)[num]
		if known && child == numbers {
			// A repeated number, packed (bytes) or not: 8 bytes decoded
			// (and a slice that may double as it grows) per wire byte.
			l := protowire.ConsumeFieldValue(num, typ, b)
			if l < 0 {
				return
			}
			w.n += (l*16 + protoElementBytes - 1) / protoElementBytes
			b = b[l:]
			continue
		}
		if known && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return
			}
			b = b[l:]
			w.n++
			if child != nil {
				w.walk(v, child, depth+1)
			}
			continue
		}
		l = protowire.ConsumeFieldValue(num, typ, b)
		if l < 0 {
			return
		}
		b = b[l:]
	}
}
