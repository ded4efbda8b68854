package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/otlp"
)

type otlpOutput struct {
	Status      int
	ContentType string `header:"Content-Type"`
	RetryAfter  string `header:"Retry-After"`
	Body        []byte
}

var otlpTracesOp = huma.Operation{
	OperationID:  "otlp-traces",
	Summary:      "Receive OpenTelemetry traces (OTLP/HTTP)",
	Tags:         []string{"Ingest"},
	MaxBodyBytes: analytics.MaxBodyBytes,
	Errors:       []int{400, 413, 415, 429, 503},
	Description: `An OTLP/HTTP traces receiver: point a standard exporter at the service with
` + "`OTEL_EXPORTER_OTLP_ENDPOINT={base}/v1/otlp`" + ` and
` + "`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <ingest key>`" + `. Bodies are
` + "`application/x-protobuf`" + ` or ` + "`application/json`" + ` (OTLP/JSON), gzip or not, at most 1 MiB
after decompression, at most 10,000 spans per request (counted before decoding; more is 413
` + "`too_many_items`" + `). Decoding builds a value for every span, event, link, attribute and array value
whatever it weighs on the wire, so these are counted on the wire too and priced (protobuf: the body
plus 160 bytes an element; OTLP/JSON: eight times the body plus 320 bytes a JSON value): a request
priced over 32 MiB is 413 ` + "`payload_too_large`" + ` before anything is decoded, and the price is held
against the service's decode budget (` + "`ingest.decode_budget_bytes`" + `) while the request is handled.
OTLP/JSON costs several times protobuf: prefer protobuf for large batches. Server spans following the OpenTelemetry MCP semantic conventions become
telemetry items with the same rules, rate limit and durability as ` + "`POST /v1/ingest`" + `.

Answers as the OTLP specification says: 200 with an ` + "`ExportTraceServiceResponse`" + ` in the
request's encoding, whose ` + "`partial_success.rejected_spans`" + ` counts the spans not stored (not MCP
calls, invalid, or duplicates); 429 and 503 carry ` + "`Retry-After`" + ` so exporters back off; other
failures carry a ` + "`google.rpc.Status`" + `. A missing or wrong credential is refused before the body
is read, with the API's problem document.

` + otlp.MappingDoc,
}

// otlpResponses documents the OTLP answer, which is not JSON of ours.
func otlpResponses(_ *Server, op *huma.Operation) {
	op.Responses = map[string]*huma.Response{"200": {Description: "ExportTraceServiceResponse", Content: map[string]*huma.MediaType{
		"application/x-protobuf": {Schema: &huma.Schema{Type: "string", Format: "binary"}},
		"application/json":       {Schema: &huma.Schema{Type: "object"}},
	}}}
}

func (s *Server) otlpTraces(ctx context.Context, in *rawBodyInput) (*otlpOutput, error) {
	p := principal(ctx)
	body, ct, release, fail := s.otlpReceive(ctx, in, otlp.CheckSpanCount, otlp.CheckDecodeCost)
	if fail != nil {
		return fail, nil
	}
	defer release()
	req, err := otlp.Decode(body, ct)
	if err != nil {
		return otlpError(s.refusedWhole(p.KeyID, err), ct), nil
	}
	items, rejected, resources := otlp.MapWithResources(req, time.Now())
	if len(items) > analytics.MaxBatchItems {
		return otlpError(telemetry.Errorf(telemetry.ETOOMANYITEMS,
			"At most %d MCP spans per request; this one has %d. Lower the exporter's batch size.", analytics.MaxBatchItems, len(items)), ct), nil
	}
	_, dropped, err := s.opts.Ingester.Accept(ctx, ingest.Payload{AccountID: p.AccountID, MCPID: p.MCPID,
		Items: items, Dropped: rejected, Redactor: p.Redactor, BodyBytes: len(body)})
	var te *telemetry.Error
	if err != nil && !errors.As(err, &te) {
		return nil, err // internal: logged, never detailed
	}
	if err != nil {
		return otlpError(err, ct), nil
	}
	s.markSpanSources(ctx, p.MCPID, resources)
	resp, err := otlp.EncodeResponse(dropped, ct)
	if err != nil {
		return nil, err
	}
	return &otlpOutput{Status: http.StatusOK, ContentType: ct, Body: resp}, nil
}

// otlpReceive runs what every stored OTLP export passes before it is
// decoded: the media type, the key's rate limit, decompression within the
// decode budget (precheck, when set, judges the body as it inflates), and
// the price of decoding it (price), reserved beside the body. It returns
// the body and its media type, and release to call once everything built
// from the body is no longer used; or the answer of a failed check.
func (s *Server) otlpReceive(ctx context.Context, in *rawBodyInput, precheck func(body []byte, ct string) error,
	price func(body []byte, ct string) (int64, error)) (body []byte, ct string, release func(), fail *otlpOutput) {
	p := principal(ctx)
	ct, err := otlp.MediaType(in.ContentType)
	if err != nil {
		return nil, "", nil, otlpError(err, otlp.ContentTypeJSON)
	}
	if err := s.opts.Ingester.Allow(p.KeyID); err != nil {
		return nil, "", nil, otlpError(err, ct)
	}
	var check func([]byte) error
	if precheck != nil {
		check = func(b []byte) error { return precheck(b, ct) }
	}
	body, releaseBody, err := s.decodeBudgeted(ctx, in.RawBody, in.ContentEncoding, analytics.MaxBodyBytes, check)
	if err != nil {
		return nil, "", nil, otlpError(s.refusedWhole(p.KeyID, err), ct)
	}
	// What decoding builds, priced from the elements on the wire, is
	// reserved beside the body before any of it is built.
	cost, err := price(body, ct)
	if err != nil {
		releaseBody()
		return nil, "", nil, otlpError(s.refusedWhole(p.KeyID, err), ct)
	}
	// The body holds up to MaxBodyBytes of the budget already; together
	// they never ask for more than the whole budget, which would wait
	// forever.
	releaseDecoded, err := s.reserveDecoding(ctx, min(cost, s.opts.DecodeBudgetBytes-analytics.MaxBodyBytes))
	if err != nil {
		releaseBody()
		return nil, "", nil, otlpError(err, ct)
	}
	return body, ct, func() { releaseDecoded(); releaseBody() }, nil
}

// otlpTracesBody describes the OTLP traces body in /docs.
func otlpTracesBody(*Server) map[string]*huma.MediaType {
	return map[string]*huma.MediaType{
		"application/x-protobuf": {Schema: &huma.Schema{Type: "string", Format: "binary", Description: "ExportTraceServiceRequest"}},
		"application/json":       {Schema: &huma.Schema{Type: "object", Description: "ExportTraceServiceRequest (OTLP/JSON)"}},
	}
}

// otlpError answers a failure the OTLP way: the status of our error model
// with a google.rpc.Status body in the request's encoding.
func otlpError(err error, ct string) *otlpOutput {
	status := http.StatusInternalServerError
	var retry string
	var te *telemetry.Error
	if errors.As(err, &te) {
		if st, ok := codeStatus[te.Code]; ok {
			status = st
		}
		if status == http.StatusUnprocessableEntity {
			status = http.StatusBadRequest // OTLP's answer for data refused for good
		}
		if te.RetryAfter > 0 {
			retry = strconv.Itoa(te.RetryAfter)
		}
	}
	return &otlpOutput{Status: status, ContentType: ct, RetryAfter: retry, Body: otlp.EncodeStatus(err, ct)}
}
