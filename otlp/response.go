package otlp

import (
	"fmt"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

// rejectedMessage tells the exporter's operator why spans were refused; OTLP
// exporters log it.
const rejectedMessage = "%d span(s) not stored: only MCP server spans (attribute mcp.method.name, kind SERVER, INTERNAL or unset) that satisfy the ingest item rules are accepted"

// EncodeResponse encodes the ExportTraceServiceResponse of a successful
// export in the request's encoding. With rejected > 0 it carries
// partial_success (rejected_spans and an error_message); with none, the OTLP
// spec requires partial_success to be left unset. An unsupported content
// type is EUNSUPPORTEDMEDIA.
func EncodeResponse(rejected int, contentType string) ([]byte, error) {
	resp := &coltracepb.ExportTraceServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{
			RejectedSpans: int64(rejected),
			ErrorMessage:  fmt.Sprintf(rejectedMessage, rejected),
		}
	}
	return marshal(resp, contentType)
}

// EncodeStatus encodes the body of a failed export (any 4xx or 5xx): a
// google.rpc.Status, as the OTLP/HTTP spec requires, in the request's
// encoding, or in JSON when the request's content type is unsupported (the
// 415 case). Its message is telemetry.ErrorMessage(err), so internal errors
// stay generic; its code is the gRPC code matching err's code.
func EncodeStatus(err error, contentType string) []byte {
	st := &spb.Status{Code: grpcCode(telemetry.ErrorCode(err)), Message: telemetry.ErrorMessage(err)}
	mt, mtErr := MediaType(contentType)
	if mtErr != nil {
		mt = ContentTypeJSON
	}
	b, _ := marshal(st, mt) // a Status always marshals
	return b
}

func marshal(m proto.Message, contentType string) ([]byte, error) {
	mt, err := MediaType(contentType)
	if err != nil {
		return nil, err
	}
	if mt == ContentTypeProtobuf {
		return proto.Marshal(m)
	}
	return protojson.Marshal(m)
}

// grpcCode maps a telemetry error code to the google.rpc.Code a Status
// carries (the numbers are fixed by google/rpc/code.proto).
func grpcCode(code string) int32 {
	switch code {
	case telemetry.EBADREQUEST, telemetry.EINVALID, telemetry.EUNSUPPORTEDMEDIA:
		return 3 // INVALID_ARGUMENT
	case telemetry.ENOTFOUND:
		return 5 // NOT_FOUND
	case telemetry.ECREDENTIAL, telemetry.EFORBIDDEN:
		return 7 // PERMISSION_DENIED
	case telemetry.ERATELIMITED, telemetry.ETOOLARGE, telemetry.ETOOMANYITEMS:
		return 8 // RESOURCE_EXHAUSTED
	case telemetry.EUNAVAILABLE:
		return 14 // UNAVAILABLE
	case telemetry.EUNAUTHENTICATED, telemetry.EINVALIDCREDENTIALS:
		return 16 // UNAUTHENTICATED
	}
	return 13 // INTERNAL
}
