package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

// MediaType returns the OTLP encoding named by a Content-Type header value,
// ContentTypeProtobuf or ContentTypeJSON, ignoring parameters and case
// ("application/json; charset=utf-8" is JSON). Anything else is
// EUNSUPPORTEDMEDIA.
func MediaType(contentType string) (string, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		// A malformed parameter must not hide a correct type.
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	switch mt {
	case ContentTypeProtobuf, ContentTypeJSON:
		return mt, nil
	}
	return "", telemetry.Errorf(telemetry.EUNSUPPORTEDMEDIA,
		"OTLP/HTTP bodies must be %s or %s, not %q.", ContentTypeProtobuf, ContentTypeJSON, contentType)
}

// Decode parses an OTLP/HTTP trace export body (already decompressed) in the
// encoding its Content-Type names. It returns EUNSUPPORTEDMEDIA for another
// content type, ETOOMANYITEMS or ETOOLARGE for a body that would cost too
// much to decode (CheckSpanCount, CheckDecodeCost) and EBADREQUEST for a
// body that is not an ExportTraceServiceRequest. Unknown fields are ignored in both encodings, as
// the OTLP spec requires for forward compatibility.
func Decode(body []byte, contentType string) (*coltracepb.ExportTraceServiceRequest, error) {
	mt, err := MediaType(contentType)
	if err != nil {
		return nil, err
	}
	if err := CheckSpanCount(body, mt); err != nil {
		return nil, err
	}
	if _, err := CheckDecodeCost(body, mt); err != nil {
		return nil, err
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if mt == ContentTypeProtobuf {
		// proto.Unmarshal keeps unknown fields rather than failing on them.
		if err := proto.Unmarshal(body, req); err != nil {
			return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP protobuf trace export request: %v.", err)
		}
		return req, nil
	}
	canon, err := canonicalJSON(body)
	if err != nil {
		return nil, err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(canon, req); err != nil {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP/JSON trace export request: %v.", err)
	}
	return req, nil
}

// canonicalJSON rewrites an OTLP/JSON body into the protobuf JSON mapping
// that protojson reads. The two differ in one place: OTLP/JSON writes trace
// and span ids as hex strings, the mapping as base64. A hex id is always
// converted (a 32-character hex id is also valid base64, so trying base64
// first would misread it); a value that is not hex is left alone, which lets
// protojson accept base64 ids from old exporters and reject anything else.
// Numbers are kept as written (UseNumber), so 64-bit timestamps survive.
func canonicalJSON(body []byte) ([]byte, error) {
	return canonicalJSONWith(body, spansJSONIDs)
}

// spansJSONIDs rewrites the hex ids of the spans of a traces request (and
// of their links) to base64.
func spansJSONIDs(obj map[string]any) {
	for _, rs := range arrayField(obj, "resourceSpans", "resource_spans") {
		for _, ss := range arrayField(asObject(rs), "scopeSpans", "scope_spans") {
			for _, sp := range arrayField(asObject(ss), "spans") {
				span := asObject(sp)
				hexToBase64(span, "traceId", "trace_id")
				hexToBase64(span, "spanId", "span_id")
				hexToBase64(span, "parentSpanId", "parent_span_id")
				for _, l := range arrayField(span, "links") {
					hexToBase64(asObject(l), "traceId", "trace_id")
					hexToBase64(asObject(l), "spanId", "span_id")
				}
			}
		}
	}
}

// canonicalJSONWith parses an OTLP/JSON body, lets ids rewrite its hex ids
// in place, and encodes it again.
func canonicalJSONWith(body []byte, ids func(map[string]any)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not JSON: %v.", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body holds data after its JSON object.")
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body must be a JSON object.")
	}
	ids(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not valid OTLP/JSON: %v.", err)
	}
	return out, nil
}

// arrayField returns the array under the first of names present in obj (the
// JSON name, then the proto field name, both of which protojson accepts), or
// nil when it is absent or not an array: protojson reports the latter.
func arrayField(obj map[string]any, names ...string) []any {
	for _, n := range names {
		if v, ok := obj[n]; ok {
			a, _ := v.([]any)
			return a
		}
	}
	return nil
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func hexToBase64(obj map[string]any, names ...string) {
	for _, n := range names {
		s, ok := obj[n].(string)
		if !ok {
			continue
		}
		if b, err := hex.DecodeString(s); err == nil {
			obj[n] = base64.StdEncoding.EncodeToString(b)
		}
	}
}
