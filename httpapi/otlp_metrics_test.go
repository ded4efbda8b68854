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
func metricsJSON(end time.Time) []byte {
	return []byte(fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"m"}}]},
	"scopeMetrics":[{"metrics":[{"name":"mcp.server.operation.duration","unit":"s","histogram":{"aggregationTemporality":1,
	"dataPoints":[{"startTimeUnixNano":"%d","timeUnixNano":"%d","count":"2","bucketCounts":["2","0"],"explicitBounds":[0.1],
	"attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/list"}}]}]}},
	{"name":"process.cpu.time","sum":{"dataPoints":[{"asInt":"1"}]}}]}]}]}`, end.Add(-time.Minute).UnixNano(), end.UnixNano()))
}

// TestOTLPMetricsWithoutPostgreSQL: while the emitters of spans cannot be
// looked up, an export holding MCP operation points is answered 503 with
// Retry-After (OTLP exporters retry it), never read as if no spans were
// sent; an export without such points needs no look-up.
func TestOTLPMetricsWithoutPostgreSQL(t *testing.T) {
	opts, _, _ := accountOptions(t, accounts.AuthPolicy{})
	gone, err := postgres.Open(context.Background(), postgres.Config{URL: pg.URL(t), MaxConns: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	opts.SpanSources = postgres.NewSpanSources(gone)
	s := New(opts)
	key := ingestKey(t, s)

	rec := postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", metricsJSON(time.Now()), false)
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("PostgreSQL closed: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	other := []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"process.cpu.time","sum":{"dataPoints":[{"asInt":"1"}]}}]}]}]}`)
	rec = postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", other, false)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"rejectedDataPoints":"1"`) {
		t.Fatalf("other metrics: %d %s", rec.Code, rec.Body.String())
	}
}

// TestOTLPMetricsRoute: with PostgreSQL up the point is read (gzip too),
// and a body priced over the decode limit is refused before decoding.
func TestOTLPMetricsRoute(t *testing.T) {
	opts, db, _ := accountOptions(t, accounts.AuthPolicy{})
	opts.SpanSources = postgres.NewSpanSources(db)
	s := New(opts)
	key := ingestKey(t, s)
	rec := postRaw(s, "/v1/otlp/v1/metrics", key, "application/json", gzipped(t, metricsJSON(time.Now())), true)
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
