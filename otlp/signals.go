package otlp

import (
	"encoding/json"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/jsoncount"
)

// Metrics and logs: POST /v1/otlp/v1/metrics and /v1/otlp/v1/logs answer as
// the OTLP spec says, so an instrumentation that exports all three signals
// to one endpoint (Shinzo's does by default) sees no errors, but nothing of
// them is stored: every MCP figure the service shows is computed from the
// calls, which come from traces. The response's partial_success counts every
// data point or log record as rejected and says why.
//
// Since nothing is kept, nothing is built either: a body is checked to be
// well-formed (JSON, or protobuf wire format) and its data points or log
// records are counted by walking the bytes, so a hostile body costs no
// memory whatever it holds.
const (
	rejectedPointsMessage  = "%d data point(s) not stored: this service keeps MCP calls from traces (POST /v1/otlp/v1/traces); metrics are accepted so exporters see no errors, and ignored"
	rejectedRecordsMessage = "%d log record(s) not stored: this service keeps MCP calls from traces (POST /v1/otlp/v1/traces); logs are accepted so exporters see no errors, and ignored"
)

// The OTLP/JSON paths to data points (one per metric type) and log records,
// with the JSON and proto field names.
var (
	dataPointsPath = []string{"resourceMetrics|resource_metrics", jsoncount.Wildcard, "scopeMetrics|scope_metrics",
		jsoncount.Wildcard, "metrics", jsoncount.Wildcard,
		"gauge|sum|histogram|exponentialHistogram|exponential_histogram|summary", "dataPoints|data_points"}
	logRecordsPath = []string{"resourceLogs|resource_logs", jsoncount.Wildcard, "scopeLogs|scope_logs",
		jsoncount.Wildcard, "logRecords|log_records"}
)

// Field numbers on the protobuf paths: ExportMetricsServiceRequest.
// resource_metrics = 1, ResourceMetrics.scope_metrics = 2,
// ScopeMetrics.metrics = 2, Metric.gauge/sum/histogram/
// exponential_histogram/summary = 5/7/9/10/11, each with data_points = 1;
// ExportLogsServiceRequest.resource_logs = 1, ResourceLogs.scope_logs = 2,
// ScopeLogs.log_records = 2.
var metricTypeFields = []protowire.Number{5, 7, 9, 10, 11}

// CountDataPoints counts the data points of an OTLP metrics export body
// (already decompressed), of every metric type. It returns
// EUNSUPPORTEDMEDIA for another content type and EBADREQUEST for a body
// that is not well-formed.
func CountDataPoints(body []byte, contentType string) (int, error) {
	return countSignal(body, contentType, "metrics", dataPointsPath, func(w *walker) {
		w.each(w.body, 1, func(rm []byte) bool {
			return w.each(rm, 2, func(sm []byte) bool {
				return w.each(sm, 2, func(m []byte) bool {
					for _, f := range metricTypeFields {
						if !w.each(m, f, func(points []byte) bool { return w.each(points, 1, w.count) }) {
							return false
						}
					}
					return true
				})
			})
		})
	})
}

// CountLogRecords counts the log records of an OTLP logs export body;
// errors as CountDataPoints.
func CountLogRecords(body []byte, contentType string) (int, error) {
	return countSignal(body, contentType, "logs", logRecordsPath, func(w *walker) {
		w.each(w.body, 1, func(rl []byte) bool {
			return w.each(rl, 2, func(sl []byte) bool { return w.each(sl, 2, w.count) })
		})
	})
}

// walker counts messages down a protobuf path and remembers whether any
// message on the way was malformed.
type walker struct {
	body []byte
	n    int
	bad  bool
}

// each walks the fields num of message b, stopping for good at the first
// malformed message.
func (w *walker) each(b []byte, num protowire.Number, fn func([]byte) bool) bool {
	if !forEachMessage(b, num, fn) {
		w.bad = true
	}
	return !w.bad
}

func (w *walker) count([]byte) bool { w.n++; return true }

func countSignal(body []byte, contentType, signal string, jsonPath []string, walk func(*walker)) (int, error) {
	mt, err := MediaType(contentType)
	if err != nil {
		return 0, err
	}
	if mt == ContentTypeProtobuf {
		w := &walker{body: body}
		walk(w)
		if w.bad {
			return 0, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP protobuf %s export request.", signal)
		}
		return w.n, nil
	}
	if !json.Valid(body) || len(body) == 0 || body[firstNonSpace(body)] != '{' {
		return 0, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP/JSON %s export request: it must be a JSON object.", signal)
	}
	n, _ := jsoncount.AtPath(body, jsonPath, int(^uint(0)>>1))
	return n, nil
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return 0
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
