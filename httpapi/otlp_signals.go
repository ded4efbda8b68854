package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/otlp"
)

const otlpSignalDescription = ` answer as the OTLP specification says, so an
instrumentation exporting every signal to ` + "`{base}/v1/otlp`" + ` (Shinzo's does by default) sees no errors:
200 with the export response in the request's encoding (protobuf or JSON, gzip or not, at most 1 MiB after
decompression), with the same ingest key, rate limit and failure answers as ` + "`POST /v1/otlp/v1/traces`" + `.

Nothing of logs is stored: every figure the service shows is computed from MCP calls, which
come from traces and metrics. So ` + "`partial_success`" + ` counts every log record of the request as rejected
and its ` + "`error_message`" + ` says why; an empty request leaves it unset.`

var otlpLogsOp = huma.Operation{
	OperationID:  "otlp-logs",
	Summary:      "Accept OpenTelemetry logs (OTLP/HTTP), without storing them",
	Tags:         []string{"Ingest"},
	MaxBodyBytes: analytics.MaxBodyBytes,
	Errors:       []int{400, 413, 415, 429, 503},
	Description:  "Logs exports" + otlpSignalDescription,
}

func (s *Server) otlpLogs(ctx context.Context, in *rawBodyInput) (*otlpOutput, error) {
	return s.otlpSignal(ctx, in, func(body []byte, ct string) ([]byte, error) {
		n, err := otlp.CountLogRecords(body, ct)
		if err != nil {
			return nil, err
		}
		return otlp.EncodeLogsResponse(n, ct)
	})
}

// otlpSignal answers an OTLP export of a signal that is not stored: the
// checks of the traces path (media type, rate limit, body), then the
// response respond makes of the decompressed body.
func (s *Server) otlpSignal(ctx context.Context, in *rawBodyInput, respond func(body []byte, ct string) ([]byte, error)) (*otlpOutput, error) {
	ct, err := otlp.MediaType(in.ContentType)
	if err != nil {
		return otlpError(err, otlp.ContentTypeJSON), nil
	}
	if err := s.opts.Ingester.Allow(principal(ctx).KeyID); err != nil {
		return otlpError(err, ct), nil
	}
	body, release, err := s.decodeBudgeted(ctx, in.RawBody, in.ContentEncoding, analytics.MaxBodyBytes, nil)
	if err != nil {
		return otlpError(s.refusedWhole(principal(ctx).KeyID, err), ct), nil
	}
	defer release()
	resp, err := respond(body, ct)
	if err != nil {
		return otlpError(err, ct), nil
	}
	return &otlpOutput{Status: http.StatusOK, ContentType: ct, Body: resp}, nil
}

// otlpSignalResponses documents the answer of the metrics and logs paths.
func otlpSignalResponses(name string) func(*Server, *huma.Operation) {
	return func(_ *Server, op *huma.Operation) {
		op.Responses = map[string]*huma.Response{"200": {Description: name, Content: map[string]*huma.MediaType{
			"application/x-protobuf": {Schema: &huma.Schema{Type: "string", Format: "binary"}},
			"application/json":       {Schema: &huma.Schema{Type: "object"}},
		}}}
	}
}

// otlpSignalBody describes a metrics or logs request body in /docs.
func otlpSignalBody(name string) func(*Server) map[string]*huma.MediaType {
	return func(*Server) map[string]*huma.MediaType {
		return map[string]*huma.MediaType{
			"application/x-protobuf": {Schema: &huma.Schema{Type: "string", Format: "binary", Description: name}},
			"application/json":       {Schema: &huma.Schema{Type: "object", Description: name + " (OTLP/JSON)"}},
		}
	}
}
