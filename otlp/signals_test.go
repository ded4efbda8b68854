package otlp

import (
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

// A metrics export as Shinzo's exporter sends it (OTLP/JSON): a counter and
// a histogram, three data points.
const shinzoMetrics = `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"docs"}}]},
"scopeMetrics":[{"scope":{"name":"mcp"},"metrics":[
{"name":"mcp.server.operation.count","sum":{"dataPoints":[{"asInt":"3","timeUnixNano":"1763632800000000000","attributes":[{"key":"mcp.tool.name","value":{"stringValue":"a"}}]},{"asInt":1}],"aggregationTemporality":2,"isMonotonic":true}},
{"name":"mcp.server.operation.duration","histogram":{"dataPoints":[{"count":"4","sum":12.5,"bucketCounts":["1","3"],"explicitBounds":[5],
"exemplars":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","asDouble":3}]}],"aggregationTemporality":2}}]}]}]}`

// TestShinzoMetrics: Shinzo's export decodes in both encodings; its
// counter is not read and its histogram, cumulative (Shinzo's default), is
// rejected as such.
func TestShinzoMetrics(t *testing.T) {
	req, err := DecodeMetrics([]byte(shinzoMetrics), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := proto.Marshal(req)
	for name, body := range map[string][]byte{ContentTypeJSON: []byte(shinzoMetrics), ContentTypeProtobuf: pb} {
		req, err := DecodeMetrics(body, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ex := req.GetResourceMetrics()[0].GetScopeMetrics()[0].GetMetrics()[1].GetHistogram().GetDataPoints()[0].GetExemplars()[0]; len(ex.GetTraceId()) != 16 || len(ex.GetSpanId()) != 8 {
			t.Errorf("%s: exemplar ids %x %x", name, ex.GetTraceId(), ex.GetSpanId())
		}
		points, rej := MapMetrics(req, now, 1000, nil)
		if len(points) != 0 || rej != (MetricsRejections{NotRead: 2, Cumulative: 1}) {
			t.Errorf("%s: %v, %+v", name, points, rej)
		}
	}
	b, _ := EncodeMetricsResponse(MetricsRejections{NotRead: 2, Cumulative: 1}, 0, ContentTypeProtobuf)
	resp := &colmetricspb.ExportMetricsServiceResponse{}
	if err := proto.Unmarshal(b, resp); err != nil || resp.GetPartialSuccess().GetRejectedDataPoints() != 3 ||
		!strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), "1 data point(s) cumulative") {
		t.Errorf("response %v: %v", resp, err)
	}
	if b, _ := EncodeMetricsResponse(MetricsRejections{}, 0, ContentTypeJSON); string(b) != "{}" {
		t.Errorf("empty request: response %s, want partial_success unset", b)
	}
}

func TestLogsRoundTrip(t *testing.T) {
	body := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"a"},"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7"},{"severityNumber":9}]}]}]}`
	if n, err := CountLogRecords([]byte(body), "application/json; charset=utf-8"); err != nil || n != 2 {
		t.Fatalf("JSON: %d records, %v; want 2", n, err)
	}
	req := &collogspb.ExportLogsServiceRequest{}
	if err := protojson.Unmarshal([]byte(strings.NewReplacer(`"4bf92f3577b34da6a3ce929d0e0e4736"`, `"S/kvNXezTaajzpKdDg5HNg=="`, `"00f067aa0ba902b7"`, `"APBnqgupArc="`).Replace(body)), req); err != nil {
		t.Fatal(err)
	}
	pb, _ := proto.Marshal(req)
	if n, err := CountLogRecords(pb, "application/x-protobuf"); err != nil || n != 2 {
		t.Fatalf("protobuf: %d records, %v; want 2", n, err)
	}
	b, _ := EncodeLogsResponse(2, ContentTypeJSON)
	resp := &collogspb.ExportLogsServiceResponse{}
	if err := protojson.Unmarshal(b, resp); err != nil || resp.GetPartialSuccess().GetRejectedLogRecords() != 2 {
		t.Errorf("response %s: %v", b, err)
	}
}

func TestSignalDecodeErrors(t *testing.T) {
	for _, body := range []string{"{", "[]", "", "null"} {
		if _, err := DecodeMetrics([]byte(body), "application/json"); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
			t.Errorf("JSON %q: %v", body, err)
		}
	}
	// A truncated nested message is malformed however deep it is.
	for _, body := range [][]byte{{0xff, 0xff}, {0x0a, 0x05, 0x12, 0x09, 0x12}} {
		if _, err := CountLogRecords(body, "application/x-protobuf"); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
			t.Errorf("protobuf % x: %v", body, err)
		}
	}
	if _, err := CountLogRecords(nil, "text/plain"); telemetry.ErrorCode(err) != telemetry.EUNSUPPORTEDMEDIA {
		t.Errorf("text/plain: %v", err)
	}
	// An empty protobuf body is an empty request.
	if req, err := DecodeMetrics(nil, "application/x-protobuf"); err != nil || len(req.GetResourceMetrics()) != 0 {
		t.Errorf("empty: %v, %v", req, err)
	}
}
