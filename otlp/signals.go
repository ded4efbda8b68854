package otlp

import (
	"encoding/json"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/jsoncount"
)

// Logs: POST /v1/otlp/v1/logs answers as the OTLP spec says, so an
// instrumentation that exports every signal to one endpoint (Shinzo's does
// by default) sees no errors, but nothing of it is stored: the MCP figures
// are computed from calls, which come from traces and from the
// mcp.server.operation.duration metric (metrics.go). The response's
// partial_success counts every log record as rejected and says why.
//
// Since nothing is kept, nothing is built either: a body is checked to be
// well-formed (JSON, or protobuf wire format) and its log records are
// counted by walking the bytes, so a hostile body costs no memory whatever
// it holds.
const rejectedRecordsMessage = "%d log record(s) not stored: this service keeps MCP calls from traces and metrics; logs are accepted so exporters see no errors, and ignored"

// The OTLP/JSON path to log records, with the JSON and proto field names.
var logRecordsPath = []string{"resourceLogs|resource_logs", jsoncount.Wildcard, "scopeLogs|scope_logs",
	jsoncount.Wildcard, "logRecords|log_records"}

// Field numbers on the protobuf path: ExportLogsServiceRequest.
// resource_logs = 1, ResourceLogs.scope_logs = 2, ScopeLogs.log_records = 2.

// CountLogRecords counts the log records of an OTLP logs export body;
// EUNSUPPORTEDMEDIA for another content type, EBADREQUEST for a body
// that is not well-formed.
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

// EncodeLogsResponse encodes the ExportLogsServiceResponse of a logs export:
// rejected log records in partial_success, left unset when there are none
// (an empty request).
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
