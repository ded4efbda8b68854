package otlp

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *telemetry.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v; want a *telemetry.Error with code %s", err, code)
	}
}

func TestDecodeProtobuf(t *testing.T) {
	req := request([]*commonpb.KeyValue{kv("service.version", "1.4.0")}, serverSpan())
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// An unknown field (number 1000) from a newer OTLP version is skipped.
	body = protowire.AppendTag(body, 1000, protowire.BytesType)
	body = protowire.AppendString(body, "future")

	got, err := Decode(body, "application/x-protobuf")
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, req) {
		// proto.Equal compares unknown fields too; compare the known part.
		got.ProtoReflect().SetUnknown(nil)
		if !proto.Equal(got, req) {
			t.Fatalf("decoded %v; want %v", got, req)
		}
	}
}

// otlpJSON is an OTLP/JSON export as exporters send it: hex ids (one upper
// case), int and named enums, int64s as strings and as numbers, and fields
// this version of OTLP does not know at several levels.
var otlpJSON = strings.NewReplacer(
	"START", strconv.FormatInt(start.UnixNano(), 10),
	"END", strconv.FormatInt(start.UnixNano()+182_500_000, 10),
).Replace(`{
  "resourceSpans": [{
    "resource": {"attributes": [{"key": "service.version", "value": {"stringValue": "1.4.0"}}], "futureResourceField": 1},
    "scopeSpans": [{
      "scope": {"name": "mcp-go", "version": "0.1.0"},
      "spans": [
        {
          "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
          "spanId": "00F067AA0BA902B7",
          "parentSpanId": "",
          "name": "tools/call search_docs",
          "kind": 2,
          "startTimeUnixNano": "START",
          "endTimeUnixNano": END,
          "attributes": [
            {"key": "mcp.method.name", "value": {"stringValue": "tools/call"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search_docs"}},
            {"key": "mcp.session.id", "value": {"stringValue": "s-81"}},
            {"key": "retries", "value": {"intValue": "3"}}
          ],
          "links": [{"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0102030405060708"}],
          "status": {"code": "STATUS_CODE_ERROR", "message": "upstream timed out", "futureStatusField": true},
          "futureSpanField": {"nested": [1, 2, 3]}
        },
        {
          "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
          "span_id": "1111111111111111",
          "parent_span_id": "00f067aa0ba902b7",
          "name": "db query",
          "kind": "SPAN_KIND_CLIENT",
          "status": {"code": 1}
        }
      ]
    }]
  }],
  "futureTopLevel": "x"
}`)

func TestDecodeJSON(t *testing.T) {
	req, err := Decode([]byte(otlpJSON), "Application/JSON; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	spans := req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()
	if len(spans) != 2 {
		t.Fatalf("decoded %d spans; want 2", len(spans))
	}
	first, second := spans[0], spans[1]
	if !bytes.Equal(first.TraceId, traceID) || !bytes.Equal(first.SpanId, spanID) {
		t.Errorf("ids %x %x; want %x %x (hex, not base64)", first.TraceId, first.SpanId, traceID, spanID)
	}
	if len(first.ParentSpanId) != 0 {
		t.Errorf("empty parent id decoded as %x", first.ParentSpanId)
	}
	if l := first.Links[0]; l.TraceId[15] != 0x10 || l.SpanId[7] != 0x08 {
		t.Errorf("link ids %x %x not decoded as hex", l.TraceId, l.SpanId)
	}
	if first.Kind != tracepb.Span_SPAN_KIND_SERVER || first.Status.Code != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("int kind / named status: %v %v", first.Kind, first.Status.Code)
	}
	if second.Kind != tracepb.Span_SPAN_KIND_CLIENT || second.Status.Code != tracepb.Status_STATUS_CODE_OK {
		t.Errorf("named kind / int status: %v %v", second.Kind, second.Status.Code)
	}
	if first.StartTimeUnixNano != uint64(start.UnixNano()) || first.EndTimeUnixNano != uint64(start.UnixNano())+182_500_000 {
		t.Errorf("times %d %d lost precision", first.StartTimeUnixNano, first.EndTimeUnixNano)
	}
	if !bytes.Equal(second.SpanId, bytes.Repeat([]byte{0x11}, 8)) || !bytes.Equal(second.ParentSpanId, spanID) {
		t.Errorf("proto field names: ids %x %x not decoded as hex", second.SpanId, second.ParentSpanId)
	}
}

// TestDecodeJSONThenMap checks the whole path an OTLP/JSON export takes.
func TestDecodeJSONThenMap(t *testing.T) {
	req, err := Decode([]byte(otlpJSON), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	items, rejected := Map(req, now)
	if len(items) != 1 || rejected != 1 {
		t.Fatalf("got %d items, %d rejected; want 1 and 1 (the client span)", len(items), rejected)
	}
	it := items[0]
	if it.ID != traceHex+spanHex || it.Name != "search_docs" || it.ErrorMessage != "upstream timed out" ||
		it.ServerVersion != "1.4.0" || *it.DurationMs != 182.5 {
		t.Errorf("item %+v", it)
	}
}

func TestDecodeJSONBase64IDs(t *testing.T) {
	// Old exporters wrote the protobuf JSON mapping's base64; such ids are not
	// hex and are read as base64.
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"S/kvNXezTaajzpKdDg5HNg==","spanId":"APBnqgupArc="}]}]}]}`
	req, err := Decode([]byte(body), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	s := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if !bytes.Equal(s.TraceId, traceID) || !bytes.Equal(s.SpanId, spanID) {
		t.Errorf("ids %x %x", s.TraceId, s.SpanId)
	}
}

func TestDecodeJSONUnknownEnumName(t *testing.T) {
	// DiscardUnknown also skips enum names from a newer OTLP: the field keeps
	// its zero value instead of failing the whole export.
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SPAN_KIND_FUTURE","status":{"code":"STATUS_CODE_FUTURE"}}]}]}]}`
	req, err := Decode([]byte(body), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	if s := req.ResourceSpans[0].ScopeSpans[0].Spans[0]; s.Kind != 0 || s.Status.GetCode() != 0 {
		t.Errorf("kind %v, status %v; want the zero values", s.Kind, s.Status.GetCode())
	}
}

func TestDecodeEmpty(t *testing.T) {
	for _, tc := range []struct{ body, ct string }{{"", "application/x-protobuf"}, {"{}", "application/json"}} {
		req, err := Decode([]byte(tc.body), tc.ct)
		if err != nil || len(req.GetResourceSpans()) != 0 {
			t.Errorf("%s %q: %v, %v; an empty export is valid", tc.ct, tc.body, req, err)
		}
	}
}

func TestDecodeBadBodies(t *testing.T) {
	tests := []struct{ name, body, ct string }{
		{"not JSON", `{"resourceSpans": [`, "application/json"},
		{"JSON array", `[]`, "application/json"},
		{"JSON null", `null`, "application/json"},
		{"trailing data", `{} {}`, "application/json"},
		{"id neither hex nor base64", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz!"}]}]}]}`, "application/json"},
		{"spans not an array", `{"resourceSpans":[{"scopeSpans":[{"spans":{}}]}]}`, "application/json"},
		{"string where a number belongs", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"soon"}]}]}]}`, "application/json"},
		{"truncated protobuf", "\x0a\x05\x0a", "application/x-protobuf"},
		{"protobuf wire garbage", "\xff\xff\xff\xff", "application/x-protobuf"},
		{"JSON sent as protobuf", `{"resourceSpans":[]}`, "application/x-protobuf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.body), tt.ct)
			wantCode(t, err, telemetry.EBADREQUEST)
		})
	}
}

func TestMediaType(t *testing.T) {
	tests := []struct{ in, want string }{
		{"application/x-protobuf", ContentTypeProtobuf},
		{"application/json", ContentTypeJSON},
		{"application/json; charset=utf-8", ContentTypeJSON},
		{"APPLICATION/X-PROTOBUF", ContentTypeProtobuf},
		{"application/json; charset", ContentTypeJSON}, // malformed parameter
		{"", ""},
		{"text/plain", ""},
		{"application/grpc", ""},
		{"application/protobuf", ""},
		{"application/jsonx", ""},
	}
	for _, tt := range tests {
		got, err := MediaType(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("MediaType(%q) = %q; want an error", tt.in, got)
				continue
			}
			wantCode(t, err, telemetry.EUNSUPPORTEDMEDIA)
			_, err = Decode([]byte("{}"), tt.in)
			wantCode(t, err, telemetry.EUNSUPPORTEDMEDIA)
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("MediaType(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
