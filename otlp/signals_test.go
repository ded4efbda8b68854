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

func TestMetricsRoundTrip(t *testing.T) {
	if n, err := CountDataPoints([]byte(shinzoMetrics), "application/json"); err != nil || n != 3 {
		t.Fatalf("JSON: %d data points, %v; want 3", n, err)
	}
	// The same request in protobuf, built by the generated code.
	req := &colmetricspb.ExportMetricsServiceRequest{}
	if err := protojson.Unmarshal([]byte(strings.NewReplacer(`"4bf92f3577b34da6a3ce929d0e0e4736"`, `"S/kvNXezTaajzpKdDg5HNg=="`, `"00f067aa0ba902b7"`, `"APBnqgupArc="`).Replace(shinzoMetrics)), req); err != nil {
		t.Fatal(err)
	}
	pb, _ := proto.Marshal(req)
	if n, err := CountDataPoints(pb, "application/x-protobuf"); err != nil || n != 3 {
		t.Fatalf("protobuf: %d data points, %v; want 3", n, err)
	}
	for _, ct := range []string{ContentTypeJSON, ContentTypeProtobuf} {
		b, err := EncodeMetricsResponse(3, ct)
		if err != nil {
			t.Fatal(err)
		}
		resp := &colmetricspb.ExportMetricsServiceResponse{}
		if ct == ContentTypeJSON {
			err = protojson.Unmarshal(b, resp)
		} else {
			err = proto.Unmarshal(b, resp)
		}
		if err != nil || resp.GetPartialSuccess().GetRejectedDataPoints() != 3 || resp.GetPartialSuccess().GetErrorMessage() == "" {
			t.Errorf("%s response %s: %v", ct, b, err)
		}
	}
	if b, _ := EncodeMetricsResponse(0, ContentTypeJSON); string(b) != "{}" {
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
		if _, err := CountDataPoints([]byte(body), "application/json"); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
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
	if n, err := CountDataPoints(nil, "application/x-protobuf"); err != nil || n != 0 {
		t.Errorf("empty: %d, %v", n, err)
	}
}
