package otlp

import (
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

// Metrics and logs: POST /v1/otlp/v1/metrics and /v1/otlp/v1/logs answer as
// the OTLP spec says, so an instrumentation that exports all three signals
// to one endpoint (Shinzo's does by default) sees no errors, but nothing of
// them is stored: every MCP figure the service shows is computed from the
// calls, which come from traces. The response's partial_success counts every
// data point or log record as rejected and says why.
const (
	rejectedPointsMessage  = "%d data point(s) not stored: this service keeps MCP calls from traces (POST /v1/otlp/v1/traces); metrics are accepted so exporters see no errors, and ignored"
	rejectedRecordsMessage = "%d log record(s) not stored: this service keeps MCP calls from traces (POST /v1/otlp/v1/traces); logs are accepted so exporters see no errors, and ignored"
)

// DecodeMetrics parses an OTLP/HTTP metrics export body (already
// decompressed); errors as Decode.
func DecodeMetrics(body []byte, contentType string) (*colmetricspb.ExportMetricsServiceRequest, error) {
	req := &colmetricspb.ExportMetricsServiceRequest{}
	return req, decodeMessage(body, contentType, req, "metrics")
}

// DecodeLogs parses an OTLP/HTTP logs export body (already decompressed);
// errors as Decode.
func DecodeLogs(body []byte, contentType string) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	return req, decodeMessage(body, contentType, req, "logs")
}

// decodeMessage reads body into m in the encoding contentType names. In
// OTLP/JSON, trace and span ids (in exemplars and log records) are hex while
// protojson reads base64; they are not used here, and protojson never fails
// on them (every hex id is also valid base64), so no rewrite is needed.
func decodeMessage(body []byte, contentType string, m proto.Message, signal string) error {
	mt, err := MediaType(contentType)
	if err != nil {
		return err
	}
	if mt == ContentTypeProtobuf {
		if err := proto.Unmarshal(body, m); err != nil {
			return telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP protobuf %s export request: %v.", signal, err)
		}
		return nil
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, m); err != nil {
		return telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP/JSON %s export request: %v.", signal, err)
	}
	return nil
}

// DataPoints counts the data points of a metrics export request, of every
// metric type.
func DataPoints(req *colmetricspb.ExportMetricsServiceRequest) int {
	n := 0
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				n += len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) +
					len(m.GetHistogram().GetDataPoints()) + len(m.GetExponentialHistogram().GetDataPoints()) +
					len(m.GetSummary().GetDataPoints())
			}
		}
	}
	return n
}

// LogRecords counts the log records of a logs export request.
func LogRecords(req *collogspb.ExportLogsServiceRequest) int {
	n := 0
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			n += len(sl.GetLogRecords())
		}
	}
	return n
}

// EncodeMetricsResponse encodes the ExportMetricsServiceResponse of a
// metrics export: rejected data points in partial_success, left unset when
// there are none (an empty request).
func EncodeMetricsResponse(rejected int, contentType string) ([]byte, error) {
	resp := &colmetricspb.ExportMetricsServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &colmetricspb.ExportMetricsPartialSuccess{
			RejectedDataPoints: int64(rejected),
			ErrorMessage:       fmt.Sprintf(rejectedPointsMessage, rejected),
		}
	}
	return marshal(resp, contentType)
}

// EncodeLogsResponse encodes the ExportLogsServiceResponse of a logs export,
// like EncodeMetricsResponse.
func EncodeLogsResponse(rejected int, contentType string) ([]byte, error) {
	resp := &collogspb.ExportLogsServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{
			RejectedLogRecords: int64(rejected),
			ErrorMessage:       fmt.Sprintf(rejectedRecordsMessage, rejected),
		}
	}
	return marshal(resp, contentType)
}
