package otlp

import (
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
	req, err := DecodeMetrics([]byte(shinzoMetrics), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	if n := DataPoints(req); n != 3 {
		t.Fatalf("data points = %d, want 3", n)
	}
	pb, _ := proto.Marshal(req)
	req2, err := DecodeMetrics(pb, "application/x-protobuf")
	if err != nil || DataPoints(req2) != 3 {
		t.Fatalf("protobuf: %v, %d points", err, DataPoints(req2))
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
	req, err := DecodeLogs([]byte(body), "application/json; charset=utf-8")
	if err != nil || LogRecords(req) != 2 {
		t.Fatalf("%v, %d records", err, LogRecords(req))
	}
	b, _ := EncodeLogsResponse(2, ContentTypeJSON)
	resp := &collogspb.ExportLogsServiceResponse{}
	if err := protojson.Unmarshal(b, resp); err != nil || resp.GetPartialSuccess().GetRejectedLogRecords() != 2 {
		t.Errorf("response %s: %v", b, err)
	}
}

func TestSignalDecodeErrors(t *testing.T) {
	if _, err := DecodeMetrics([]byte("{"), "application/json"); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
		t.Errorf("bad JSON: %v", err)
	}
	if _, err := DecodeLogs([]byte{0xff, 0xff}, "application/x-protobuf"); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
		t.Errorf("bad protobuf: %v", err)
	}
	if _, err := DecodeLogs(nil, "text/plain"); telemetry.ErrorCode(err) != telemetry.EUNSUPPORTEDMEDIA {
		t.Errorf("text/plain: %v", err)
	}
}
