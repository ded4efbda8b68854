package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/otlp"
)

// SpanSources remembers which OTLP emitters (otlp.ResourceKey) sent MCP
// spans to an MCP, for the metrics path's "spans win" rule
// (otlp/MAPPING.md, "Metrics").
type SpanSources interface {
	// MarkSpanSources records that the resources sent MCP spans at now.
	MarkSpanSources(ctx context.Context, mcpID string, resources []string, now time.Time) error
	// SpanSourcesSince returns which of the resources sent MCP spans at or
	// after since. An error answers the export 503 (retried by
	// exporters); the PostgreSQL implementation answers from the instance's
	// memory instead while the database is unreachable.
	SpanSourcesSince(ctx context.Context, mcpID string, resources []string, since time.Time) (map[string]bool, error)
}

// markSpanSources records the emitters of an accepted traces export. It
// does not fail the export: the spans are durable already, and a mark
// missed now (PostgreSQL unreachable) is made by the emitter's next export.
func (s *Server) markSpanSources(ctx context.Context, mcpID string, resources []string) {
	if s.opts.SpanSources == nil || len(resources) == 0 {
		return
	}
	if err := s.opts.SpanSources.MarkSpanSources(ctx, mcpID, resources, time.Now()); err != nil {
		s.log.Warn("otlp: recording the emitters of spans", slog.String("mcp_id", mcpID), slog.Any("error", err))
	}
}

var otlpMetricsOp = huma.Operation{
	OperationID:  "otlp-metrics",
	Summary:      "Receive OpenTelemetry metrics (OTLP/HTTP): MCP operation durations become calls",
	Tags:         []string{"Ingest"},
	MaxBodyBytes: analytics.MaxBodyBytes,
	Errors:       []int{400, 413, 415, 429, 503},
	Description: `An OTLP/HTTP metrics receiver, with the same ingest key, encodings (` + "`application/x-protobuf`" + ` or
OTLP/JSON, gzip or not, at most 1 MiB after decompression), decode pricing and budget (protobuf: the body plus
160 bytes an element, bucket counts and bounds at 16 bytes a wire byte; OTLP/JSON: eight times the body plus
320 bytes a JSON value; over 32 MiB is 413 ` + "`payload_too_large`" + `), rate limit and failure answers as
` + "`POST /v1/otlp/v1/traces`" + `.

The histogram ` + "`mcp.server.operation.duration`" + ` of the OpenTelemetry MCP semantic conventions, from an
MCP server that sends metrics but no spans, becomes calls, errors and latency: a data point of count N is N
calls, with the same rules, deduplication and durability as ` + "`POST /v1/ingest`" + ` items, at most 1000 calls
per request (a point that would pass it is rejected). Only **delta** temporality is read: a cumulative point is
rejected (set the exporter's temporality preference to delta). Unit ` + "`s`" + ` or ` + "`ms`" + `. An emitter
(` + "`service.name`" + ` and ` + "`service.instance.id`" + `) that sent MCP spans to the same MCP in the last 24 hours
has its points skipped: its calls are counted from its spans. Every other metric is answered and not stored.

Answers as the OTLP specification says: 200 with an ` + "`ExportMetricsServiceResponse`" + ` in the request's
encoding, whose ` + "`partial_success.rejected_data_points`" + ` counts the points not read and whose
` + "`error_message`" + ` says why for each reason (calls of a retried export, dropped as duplicates, are
reported there too); an empty request leaves it unset.

` + otlp.MetricsMappingDoc,
}

func (s *Server) otlpMetrics(ctx context.Context, in *rawBodyInput) (*otlpOutput, error) {
	p := principal(ctx)
	body, ct, release, fail := s.otlpReceive(ctx, in, nil, otlp.CheckMetricsDecodeCost)
	if fail != nil {
		return fail, nil
	}
	defer release()
	req, err := otlp.DecodeMetrics(body, ct)
	if err != nil {
		return otlpError(s.refusedWhole(p.KeyID, err), ct), nil
	}
	now := time.Now()
	spansSent := map[string]bool{}
	if keys := otlp.MetricsResources(req); s.opts.SpanSources != nil && len(keys) > 0 {
		spansSent, err = s.opts.SpanSources.SpanSourcesSince(ctx, p.MCPID, keys, now.Add(-otlp.SpansWinWindow))
		if err != nil {
			return otlpError(&telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 5, Err: err,
				Message: "Whether these metrics' emitters also send spans cannot be checked right now; the export was not accepted. Retry after the Retry-After delay."}, ct), nil
		}
	}
	points, rej := otlp.MapMetrics(req, now, analytics.MaxBatchItems, func(k string) bool { return spansSent[k] })
	templates := make([]analytics.Item, len(points))
	for i := range points {
		templates[i] = points[i].Template
	}
	var duplicates int
	if len(templates) > 0 {
		// Each point's text is redacted and cut once, whatever its count.
		expand := func(redacted []analytics.Item) []analytics.Item {
			var items []analytics.Item
			for i := range points {
				points[i].Template = redacted[i]
				items = points[i].Expand(items)
			}
			return items
		}
		_, duplicates, err = s.opts.Ingester.Accept(ctx, ingest.Payload{AccountID: p.AccountID, MCPID: p.MCPID,
			Items: templates, Redactor: p.Redactor, BodyBytes: len(body), Expand: expand})
		var te *telemetry.Error
		if err != nil && !errors.As(err, &te) {
			return nil, err // internal: logged, never detailed
		}
		if err != nil {
			return otlpError(err, ct), nil
		}
	}
	resp, err := otlp.EncodeMetricsResponse(rej, duplicates, ct)
	if err != nil {
		return nil, err
	}
	return &otlpOutput{Status: http.StatusOK, ContentType: ct, Body: resp}, nil
}
