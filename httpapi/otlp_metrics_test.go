package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/postgres"
)

// metricsJSON is an OTLP/JSON metrics export of one delta
// mcp.server.operation.duration point (count 2) and one other metric.
func metricsJSON(end time.Time, service string) []byte {
	return []byte(fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},
	"scopeMetrics":[{"metrics":[{"name":"mcp.server.operation.duration","unit":"s","histogram":{"aggregationTemporality":1,
	"dataPoints":[{"startTimeUnixNano":"%d","timeUnixNano":"%d","count":"2","bucketCounts":["2","0"],"explicitBounds":[0.1],
	"attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/list"}}]}]}},
	{"name":"process.cpu.time","sum":{"dataPoints":[{"asInt":"1"}]}}]}]}]}`, service, end.Add(-time.Minute).UnixNano(), end.UnixNano()))
}

// TestOTLPMetricsWithoutPostgreSQL: while the emitters of spans cannot be
// looked up in PostgreSQL, the instance's own memory of the spans it
// received decides: an emitter whose spans reached it has its points
// skipped, another's are read; nothing is refused.
func TestOTLPMetricsWithoutPostgreSQL(t *testing.T) {
	t.Parallel()
	opts, _, _ := accountOptions(t, accounts.AuthPolicy{})
	gone, err := postgres.Open(context.Background(), postgres.Config{URL: pg.URL(t), MaxConns: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	opts.SpanSources = postgres.NewSpanSources(gone)
	s := New(opts)
	key := ingestKey(t, s)
	end := time.Now()

	rec := postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", metricsJSON(end, "m"), false)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"rejectedDataPoints":"1"`) || strings.Contains(rec.Body.String(), "skipped") {
		t.Fatalf("PostgreSQL closed, no spans: %d %s", rec.Code, rec.Body.String())
	}
	span := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"both"}}]},
	"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"tools/list","kind":2,
	"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/list"}},
	{"key":"mcp.session.id","value":{"stringValue":"s1"}}]}]}]}]}`, end.UnixNano(), end.UnixNano()+1e6)
	if rec := postRaw(s, "/v1/otlp/v1/traces", key, "application/json", []byte(span), false); rec.Code != 200 || rec.Body.String() != "{}" {
		t.Fatalf("span: %d %s", rec.Code, rec.Body.String())
	}
	rec = postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", metricsJSON(end, "both"), false)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"rejectedDataPoints":"2"`) || !strings.Contains(rec.Body.String(), "1 data point(s) skipped") {
		t.Fatalf("PostgreSQL closed, spans seen here: %d %s", rec.Code, rec.Body.String())
	}
}

// TestOTLPMetricsRoute: with PostgreSQL up the point is read (gzip too),
// and a body priced over the decode limit is refused before decoding.
func TestOTLPMetricsRoute(t *testing.T) {
	t.Parallel()
	opts, db, _ := accountOptions(t, accounts.AuthPolicy{})
	opts.SpanSources = postgres.NewSpanSources(db)
	s := New(opts)
	key := ingestKey(t, s)
	rec := postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", gzipped(t, metricsJSON(time.Now(), "m")), true)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"rejectedDataPoints":"1"`) || strings.Contains(rec.Body.String(), "invalid") {
		t.Fatalf("export: %d %s", rec.Code, rec.Body.String())
	}
	// 130,000 empty data points: about 1 MiB of OTLP/JSON, priced over
	// 32 MiB.
	flood := []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[` +
		strings.TrimSuffix(strings.Repeat("{},", 130_000), ",") + `]}}]}]}]}`)
	rec = postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", gzipped(t, flood), true)
	if rec.Code != 413 {
		t.Fatalf("flood: %d %s", rec.Code, rec.Body.String())
	}
}
