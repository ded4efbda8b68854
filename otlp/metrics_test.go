package otlp

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

const (
	delta      = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	cumulative = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
)

// histPoint is a point of the minute before now.
func histPoint(bounds []float64, counts []uint64, attrs ...*commonpb.KeyValue) *metricspb.HistogramDataPoint {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return &metricspb.HistogramDataPoint{
		Attributes:        attrs,
		StartTimeUnixNano: uint64(start.UnixNano()),
		TimeUnixNano:      uint64(now.Add(-time.Second).UnixNano()),
		Count:             n,
		BucketCounts:      counts,
		ExplicitBounds:    bounds,
	}
}

func durationMetric(unit string, temporality metricspb.AggregationTemporality, points ...*metricspb.HistogramDataPoint) *metricspb.Metric {
	return &metricspb.Metric{Name: "mcp.server.operation.duration", Unit: unit,
		Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: temporality, DataPoints: points}}}
}

func metricsRequest(resource []*commonpb.KeyValue, metrics ...*metricspb.Metric) *colmetricspb.ExportMetricsServiceRequest {
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource:     &resourcepb.Resource{Attributes: resource},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: metrics}},
	}}}
}

func expand(points []PointCalls) []analytics.Item {
	var out []analytics.Item
	for _, p := range points {
		out = p.Expand(out)
	}
	return out
}

func durations(items []analytics.Item) []float64 {
	var out []float64
	for _, it := range items {
		if it.DurationMs == nil {
			out = append(out, -1)
			continue
		}
		out = append(out, math.Round(*it.DurationMs*1e6)/1e6) // bounds are binary fractions
	}
	return out
}

var pythonResource = []*commonpb.KeyValue{kv("service.name", "docs-mcp"), kv("service.version", "1.4.0"), kv("service.instance.id", "i-1")}

// TestMapMetricsPythonSDK: points as the MCP Python SDK v2 records them
// (unit s, the conventions' bucket boundaries, mcp.method.name,
// gen_ai.tool.name, gen_ai.operation.name, mcp.protocol.version; error.type
// and rpc.response.status_code on failures) become one call per count,
// at the midpoints of their buckets.
func TestMapMetricsPythonSDK(t *testing.T) {
	bounds := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	counts := make([]uint64, len(bounds)+1)
	counts[0], counts[3], counts[len(bounds)] = 1, 2, 1 // <=10 ms, 50-100 ms, > 300 s
	ok := histPoint(bounds, counts, kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "greet"),
		kv("gen_ai.operation.name", "execute_tool"), kv("mcp.protocol.version", "2025-11-25"))
	errCounts := make([]uint64, len(bounds)+1)
	errCounts[6] = 2 // 0.5-1 s
	failed := histPoint(bounds, errCounts, kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "greet"),
		kv("error.type", "-32602"), kv("rpc.response.status_code", "-32602"))
	list := histPoint(bounds, append(make([]uint64, len(bounds)), 0), kv("mcp.method.name", "tools/list"))
	list.BucketCounts[1], list.Count = 1, 1
	req := metricsRequest(pythonResource, durationMetric("s", delta, ok, failed, list))

	points, rej := MapMetrics(req, now, 1000, nil)
	if rej.Total() != 0 {
		t.Fatalf("rejected %+v", rej)
	}
	items := expand(points)
	if want := []float64{5, 75, 75, 300_000, 750, 750, 15}; !slices.Equal(durations(items), want) {
		t.Fatalf("durations %v, want %v", durations(items), want)
	}
	ids := map[string]bool{}
	for i, it := range items {
		ids[it.ID] = true
		if !it.Validate(now) || len(it.ID) > analytics.MaxIDLen {
			t.Errorf("item %d invalid: %+v", i, it)
		}
		if !it.Timestamp.Equal(now.Add(-time.Second)) || it.ServerVersion != "1.4.0" || it.SessionID != "" || (it.Status == "ok") != (it.ErrorKind == "") {
			t.Errorf("item %d: %+v", i, it)
		}
	}
	if len(ids) != len(items) {
		t.Errorf("%d ids for %d items", len(ids), len(items))
	}
	first, err := items[0], items[4]
	if first.Method != "tools/call" || first.Name != "greet" || first.Status != "ok" || first.ProtocolVersion != "2025-11-25" ||
		first.Attributes["gen_ai.operation.name"] != "execute_tool" || first.Attributes["service.name"] != "docs-mcp" {
		t.Errorf("ok call: %+v", first)
	}
	if err.Status != "error" || err.ErrorType != "-32602" || err.ErrorKind != analytics.ErrorKindInvalidParams || err.Attributes["rpc.response.status_code"] != "-32602" {
		t.Errorf("failed call: %+v", err)
	}
	if items[6].Method != "tools/list" || items[6].Name != "" {
		t.Errorf("tools/list: %+v", items[6])
	}

	// The same request mapped again (a retried export) gives the same ids;
	// a point of another interval gives others.
	again, _ := MapMetrics(req, now, 1000, nil)
	for i, it := range expand(again) {
		if it.ID != items[i].ID {
			t.Fatalf("retry: id %d %s, first %s", i, it.ID, items[i].ID)
		}
	}
	next := proto.Clone(req).(*colmetricspb.ExportMetricsServiceRequest)
	p := next.ResourceMetrics[0].ScopeMetrics[0].Metrics[0].GetHistogram().DataPoints[0]
	p.StartTimeUnixNano, p.TimeUnixNano = p.TimeUnixNano, p.TimeUnixNano+uint64(time.Second/2)
	nextPoints, _ := MapMetrics(next, now, 1000, nil)
	if id := expand(nextPoints)[0].ID; ids[id] {
		t.Errorf("the next interval's call reused id %s", id)
	}
	// Attribute order does not change the ids.
	slices.Reverse(req.ResourceMetrics[0].ScopeMetrics[0].Metrics[0].GetHistogram().DataPoints[0].Attributes)
	slices.Reverse(req.ResourceMetrics[0].Resource.Attributes)
	reordered, _ := MapMetrics(req, now, 1000, nil)
	if expand(reordered)[0].ID != items[0].ID {
		t.Errorf("reordered attributes changed the id")
	}
}

// TestMapMetricsShinzo: Shinzo's histogram is in ms, names the tool
// mcp.tool.name and puts mcp.session.id on the resource; with delta
// temporality configured its points are read as they are.
func TestMapMetricsShinzo(t *testing.T) {
	p := histPoint([]float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000}, []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		kv("mcp.method.name", "tools/call"), kv("mcp.tool.name", "add"))
	req := metricsRequest([]*commonpb.KeyValue{kv("service.name", "calc"), kv("mcp.session.id", "shinzo-s1")}, durationMetric("ms", delta, p))
	points, rej := MapMetrics(req, now, 1000, nil)
	items := expand(points)
	if rej.Total() != 0 || !slices.Equal(durations(items), []float64{7.5, 1000}) {
		t.Fatalf("%v %+v", durations(items), rej)
	}
	if items[0].Name != "add" || items[0].SessionID != "shinzo-s1" || items[0].Status != "ok" {
		t.Errorf("%+v", items[0])
	}
}

// TestMapMetricsRejections: each reason a point is not read, counted.
func TestMapMetricsRejections(t *testing.T) {
	call := func() []*commonpb.KeyValue {
		return []*commonpb.KeyValue{kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "t")}
	}
	good := func() *metricspb.HistogramDataPoint { return histPoint([]float64{1}, []uint64{1, 0}, call()...) }
	badSum := good()
	badSum.Count = 3 // buckets hold 1
	oldPoint := good()
	oldPoint.StartTimeUnixNano, oldPoint.TimeUnixNano = uint64(now.Add(-40*24*time.Hour).UnixNano()), uint64(now.Add(-40*24*time.Hour).UnixNano())
	noMethod := histPoint([]float64{1}, []uint64{1, 0}, kv("gen_ai.tool.name", "t"))
	notification := histPoint([]float64{1}, []uint64{1, 0}, kv("mcp.method.name", "notifications/initialized"))
	noTool := histPoint([]float64{1}, []uint64{1, 0}, kv("mcp.method.name", "tools/call")) // tools/call needs a name
	bounds := histPoint([]float64{1, 2}, []uint64{1, 0}, call()...)
	empty := histPoint([]float64{1}, []uint64{0, 0}, call()...) // no calls this interval: nothing, not rejected
	counter := &metricspb.Metric{Name: "mcp.server.operation.count", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		DataPoints: []*metricspb.NumberDataPoint{{}, {}}}}}
	gaugeNamed := &metricspb.Metric{Name: "mcp.server.operation.duration", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
		DataPoints: []*metricspb.NumberDataPoint{{}}}}}
	req := metricsRequest(pythonResource,
		durationMetric("s", delta, good(), badSum, oldPoint, noMethod, notification, noTool, bounds, empty),
		durationMetric("s", cumulative, good(), good()),
		durationMetric("s", metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED, good()),
		durationMetric("us", delta, good()),
		counter, gaugeNamed)
	points, rej := MapMetrics(req, now, 1000, nil)
	want := MetricsRejections{Invalid: 6, Cumulative: 3, Unit: 1, NotRead: 3}
	if len(expand(points)) != 1 || rej != want {
		t.Fatalf("%d calls, %+v; want 1, %+v", len(expand(points)), rej, want)
	}

	// Spans win: the resource's points are skipped, another resource's read.
	other := []*commonpb.KeyValue{kv("service.name", "docs-mcp"), kv("service.instance.id", "i-2")}
	two := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: append(
		metricsRequest(pythonResource, durationMetric("s", delta, good(), good())).ResourceMetrics,
		metricsRequest(other, durationMetric("s", delta, good())).ResourceMetrics...)}
	if keys := MetricsResources(two); !slices.Equal(keys, []string{ResourceKey(pythonResource), ResourceKey(other)}) || keys[0] == keys[1] {
		t.Fatalf("resources %v", keys)
	}
	sent := func(k string) bool { return k == ResourceKey(pythonResource) }
	points, rej = MapMetrics(two, now, 1000, sent)
	if len(expand(points)) != 1 || rej != (MetricsRejections{SpansWin: 2}) || expand(points)[0].Attributes["service.instance.id"] != "i-2" {
		t.Fatalf("spans win: %v, %+v", expand(points), rej)
	}
	// The key is service.name and service.instance.id only.
	if ResourceKey(pythonResource) != ResourceKey([]*commonpb.KeyValue{kv("service.instance.id", "i-1"), kv("service.name", "docs-mcp"), kv("service.version", "2")}) {
		t.Error("resource key depends on other attributes")
	}
}

// TestMapMetricsBudget: the calls of a request are bounded like the items
// of an ingest batch; the point that would pass the budget is rejected
// whole, before anything of its size is built, and later points that fit
// are still read.
func TestMapMetricsBudget(t *testing.T) {
	attrs := []*commonpb.KeyValue{kv("mcp.method.name", "tools/list")}
	big := histPoint([]float64{1}, []uint64{600, 0}, attrs...)
	huge := histPoint([]float64{1}, []uint64{1 << 62, 0}, attrs...)
	small := histPoint([]float64{1}, []uint64{400, 0}, attrs...)
	req := metricsRequest(pythonResource, durationMetric("s", delta, big, big, huge, small))
	points, rej := MapMetrics(req, now, analytics.MaxBatchItems, nil)
	if n := len(expand(points)); n != 1000 || rej != (MetricsRejections{OverBudget: 2}) {
		t.Fatalf("%d calls, %+v", n, rej)
	}
}

// TestMapMetricsNoBuckets: a point without buckets has its mean duration
// (sum / count), or none without a sum.
func TestMapMetricsNoBuckets(t *testing.T) {
	withSum := histPoint(nil, nil, kv("mcp.method.name", "ping"))
	withSum.Count, withSum.Sum = 4, ptr(0.2)
	noSum := histPoint(nil, nil, kv("mcp.method.name", "ping"))
	noSum.Count = 1
	points, rej := MapMetrics(metricsRequest(nil, durationMetric("s", delta, withSum, noSum)), now, 1000, nil)
	if got := durations(expand(points)); rej.Total() != 0 || !slices.Equal(got, []float64{50, 50, 50, 50, -1}) {
		t.Fatalf("%v %+v", got, rej)
	}
}

// TestDecodeMetricsJSON: OTLP/JSON as exporters write it (64-bit integers
// as strings, hex exemplar ids) maps like protobuf.
func TestDecodeMetricsJSON(t *testing.T) {
	body := fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"py"}}]},
	"scopeMetrics":[{"scope":{"name":"mcp"},"metrics":[{"name":"mcp.server.operation.duration","unit":"s",
	"histogram":{"aggregationTemporality":1,"dataPoints":[{"startTimeUnixNano":"%d","timeUnixNano":"%d","count":"3","sum":0.4,
	"bucketCounts":["1","2"],"explicitBounds":[0.1],
	"attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/call"}},{"key":"gen_ai.tool.name","value":{"stringValue":"s"}},
	 {"key":"error.type","value":{"stringValue":"tool_error"}}],
	"exemplars":[{"traceId":"%s","spanId":"%s","asDouble":0.2}]}]}}]}]}]}`, start.UnixNano(), now.UnixNano(), traceHex, spanHex)
	req, err := DecodeMetrics([]byte(body), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	points, rej := MapMetrics(req, now, 1000, nil)
	items := expand(points)
	if rej.Total() != 0 || !slices.Equal(durations(items), []float64{50, 100, 100}) || items[2].ErrorType != "tool_error" || items[2].Status != "error" {
		t.Fatalf("%+v %+v", items, rej)
	}
}

// TestMetricsDecodeCost: the price covers what decoding allocates for
// points heavy in buckets and attributes, and a flood of packed varint
// bucket counts (1 byte on the wire, 8 decoded) is refused before
// decoding.
func TestMetricsDecodeCost(t *testing.T) {
	var points []*metricspb.HistogramDataPoint
	for i := range 300 {
		counts := make([]uint64, 101)
		bounds := make([]float64, 100)
		for j := range bounds {
			bounds[j] = float64(j)
		}
		points = append(points, histPoint(bounds, counts, kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", fmt.Sprint("t", i))))
	}
	pb, _ := proto.Marshal(metricsRequest(pythonResource, durationMetric("s", delta, points...)))
	cost, err := CheckMetricsDecodeCost(pb, ContentTypeProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	got := allocated(func() {
		if _, err := DecodeMetrics(pb, ContentTypeProtobuf); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("histograms: %d bytes, priced %d KiB, decoding allocated %d KiB", len(pb), cost>>10, got>>10)
	if got > cost {
		t.Errorf("priced %d bytes, decoding allocated %d", cost, got)
	}

	// Packed varint bucket counts: 1 byte each on the wire, 8 decoded.
	flood := &metricspb.ExponentialHistogramDataPoint{Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{BucketCounts: make([]uint64, 1_000_000)}}
	body, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "x",
			Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
				DataPoints: []*metricspb.ExponentialHistogramDataPoint{flood}}}}}}}}}})
	cost, err = CheckMetricsDecodeCost(body, ContentTypeProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	got = allocated(func() {
		if _, err := DecodeMetrics(body, ContentTypeProtobuf); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("packed bucket counts: %d bytes, priced %d KiB, decoding allocated %d KiB", len(body), cost>>10, got>>10)
	if got > cost {
		t.Errorf("packed bucket counts: priced %d bytes, decoding allocated %d", cost, got)
	}
	// Three such bodies in one would cost more than a request may.
	three := append(append(append([]byte(nil), body...), body...), body...)
	if _, err := CheckMetricsDecodeCost(three, ContentTypeProtobuf); telemetry.ErrorCode(err) != telemetry.ETOOLARGE {
		t.Errorf("%d bytes of packed bucket counts: %v", len(three), err)
	}
}

// TestMetricsMappingDoc: /docs publishes the Metrics section of
// MAPPING.md with the metrics route.
func TestMetricsMappingDoc(t *testing.T) {
	if !strings.HasPrefix(MetricsMappingDoc, "## Metrics\n") || strings.Contains(MetricsMappingDoc, "\n## Logs") ||
		!strings.Contains(MetricsMappingDoc, "mcp.server.operation.duration") {
		t.Errorf("MetricsMappingDoc:\n%s", MetricsMappingDoc)
	}
}
