package otlp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Metrics: POST /v1/otlp/v1/metrics reads one metric, the conventions'
// mcp.server.operation.duration histogram, as calls, errors and latency of
// the MCP; every other data point is answered and not stored
// (MAPPING.md, "Metrics"). In short:
//
//   - Only delta temporality. A cumulative point holds every call since the
//     series started; turning it into calls needs the previous point of the
//     same series, which another instance may have received, or which a
//     restart of the emitter (a new series start) or of the service
//     (memory) loses. Such points are rejected with a message saying how to
//     switch the exporter to delta.
//   - Unit "s" (the conventions') or "ms" (Shinzo's); anything else is
//     rejected, since durations cannot be read from it.
//   - A point of count N becomes N calls, each with the midpoint of its
//     bucket as duration (first bucket: its upper bound / 2; overflow
//     bucket: the last bound), method, name and error type from the point's
//     attributes, timestamp the point's time, and an id hashed from the
//     resource, the metric, the point's start and end times, its attributes
//     and the call's index, so a retried export is dropped as a duplicate.
//   - Spans win: a resource (service.name and service.instance.id) that sent
//     MCP spans to the same MCP in the last 24 hours has its points skipped,
//     so an emitter sending both signals is counted once, from its spans.
const (
	metricOperationDuration = "mcp.server.operation.duration"
	// SpansWinWindow is how long after a resource's last MCP span its
	// metric points are skipped.
	SpansWinWindow = 24 * time.Hour
)

// Resource attributes identifying an emitter for "spans win".
const (
	attrServiceName       = "service.name"
	attrServiceInstanceID = "service.instance.id"
)

// ResourceKey identifies the emitter a resource describes: a hash of its
// service.name and service.instance.id (either may be absent). The trace
// path records the keys of resources that sent MCP spans; the metrics path
// skips the points of those keys.
func ResourceKey(resource []*commonpb.KeyValue) string {
	h := sha256.New()
	for _, k := range []string{attrServiceName, attrServiceInstanceID} {
		v := stringAttr(resource, k)
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// DecodeMetrics parses an OTLP/HTTP metrics export body (already
// decompressed) like Decode does a traces body: EUNSUPPORTEDMEDIA for
// another content type, ETOOLARGE for a body priced over MaxDecodeBytes
// (CheckMetricsDecodeCost), EBADREQUEST for a body that is not an
// ExportMetricsServiceRequest. Unknown fields are ignored.
func DecodeMetrics(body []byte, contentType string) (*colmetricspb.ExportMetricsServiceRequest, error) {
	mt, err := MediaType(contentType)
	if err != nil {
		return nil, err
	}
	if _, err := CheckMetricsDecodeCost(body, mt); err != nil {
		return nil, err
	}
	req := &colmetricspb.ExportMetricsServiceRequest{}
	if mt == ContentTypeProtobuf {
		if err := proto.Unmarshal(body, req); err != nil {
			return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP protobuf metrics export request: %v.", err)
		}
		return req, nil
	}
	canon, err := canonicalJSONWith(body, metricsJSONIDs)
	if err != nil {
		return nil, err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(canon, req); err != nil {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not an OTLP/JSON metrics export request: %v.", err)
	}
	return req, nil
}

// metricsJSONIDs rewrites the hex trace and span ids of exemplars, the only
// ids a metrics request holds, to base64 (see canonicalJSON).
func metricsJSONIDs(obj map[string]any) {
	for _, rm := range arrayField(obj, "resourceMetrics", "resource_metrics") {
		for _, sm := range arrayField(asObject(rm), "scopeMetrics", "scope_metrics") {
			for _, m := range arrayField(asObject(sm), "metrics") {
				for _, typ := range []string{"gauge", "sum", "histogram", "exponentialHistogram", "exponential_histogram"} {
					for _, p := range arrayField(asObject(asObject(m)[typ]), "dataPoints", "data_points") {
						for _, ex := range arrayField(asObject(p), "exemplars") {
							hexToBase64(asObject(ex), "traceId", "trace_id")
							hexToBase64(asObject(ex), "spanId", "span_id")
						}
					}
				}
			}
		}
	}
}

// MetricsResources lists the distinct ResourceKeys of the resources of a
// request that hold mcp.server.operation.duration points: the ones whose
// recent spans the caller looks up for MapMetrics.
func MetricsResources(req *colmetricspb.ExportMetricsServiceRequest) []string {
	seen := map[string]bool{}
	var keys []string
	for _, rm := range req.GetResourceMetrics() {
		if !holdsOperationDuration(rm) {
			continue
		}
		k := ResourceKey(rm.GetResource().GetAttributes())
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func holdsOperationDuration(rm *metricspb.ResourceMetrics) bool {
	for _, sm := range rm.GetScopeMetrics() {
		for _, m := range sm.GetMetrics() {
			if m.GetName() == metricOperationDuration {
				return true
			}
		}
	}
	return false
}

// PointCalls are the calls one data point stands for: Template holds every
// field they share (its ID is the point's hash), Durations one duration
// each (nil entries: not measured). Templates are redacted and cut before
// Expand, so a point's text is handled once whatever its count.
type PointCalls struct {
	Template  analytics.Item
	Durations []*float64
}

// Expand appends the calls of the point to out, each with its duration and
// the id Template.ID + "-" + its index.
func (p PointCalls) Expand(out []analytics.Item) []analytics.Item {
	for i, d := range p.Durations {
		it := p.Template
		it.ID = p.Template.ID + "-" + strconv.Itoa(i)
		it.DurationMs = d
		if len(p.Template.Attributes) > 0 { // items own their maps
			it.Attributes = make(map[string]string, len(p.Template.Attributes))
			for k, v := range p.Template.Attributes {
				it.Attributes[k] = v
			}
		}
		out = append(out, it)
	}
	return out
}

// MetricsRejections counts the data points not stored, by reason, for
// partial_success.
type MetricsRejections struct {
	NotRead    int // another metric, or not a histogram
	Cumulative int // cumulative (or unspecified) temporality
	Unit       int // a unit other than s or ms
	SpansWin   int // its resource sent MCP spans in the last 24 hours
	OverBudget int // its calls would pass the request's item budget
	Invalid    int // malformed, a notification, or failing an item rule
}

// Total is the number of data points rejected.
func (r MetricsRejections) Total() int {
	return r.NotRead + r.Cumulative + r.Unit + r.SpansWin + r.OverBudget + r.Invalid
}

// MapMetrics turns the mcp.server.operation.duration points of a request
// into calls, at most budget of them (the per-request item budget of
// POST /v1/ingest), with now as the reference time of item validation.
// spansSent reports whether a resource key sent MCP spans in the last 24
// hours; its points are skipped. Every point not turned into calls is
// counted in the rejections.
func MapMetrics(req *colmetricspb.ExportMetricsServiceRequest, now time.Time, budget int, spansSent func(resourceKey string) bool) ([]PointCalls, MetricsRejections) {
	var out []PointCalls
	var rej MetricsRejections
	for _, rm := range req.GetResourceMetrics() {
		resource := rm.GetResource().GetAttributes()
		var resHash []byte
		skip := false
		if holdsOperationDuration(rm) {
			skip = spansSent != nil && spansSent(ResourceKey(resource))
			resHash = hashAttributes(resource)
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				h := m.GetHistogram()
				if m.GetName() != metricOperationDuration || h == nil {
					rej.NotRead += dataPoints(m)
					continue
				}
				points := h.GetDataPoints()
				switch {
				case skip:
					rej.SpansWin += len(points)
					continue
				case h.GetAggregationTemporality() != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA:
					rej.Cumulative += len(points)
					continue
				}
				scale, ok := unitScale(m.GetUnit())
				if !ok {
					rej.Unit += len(points)
					continue
				}
				for _, p := range points {
					if p.GetCount() > uint64(budget) {
						rej.OverBudget++
						continue
					}
					pc, ok := mapPoint(p, resource, resHash, scale, now)
					switch {
					case !ok:
						rej.Invalid++
					case len(pc.Durations) > 0:
						budget -= len(pc.Durations)
						out = append(out, pc)
					}
				}
			}
		}
	}
	return out, rej
}

// dataPoints counts the points of a metric of any type.
func dataPoints(m *metricspb.Metric) int {
	return len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) + len(m.GetHistogram().GetDataPoints()) +
		len(m.GetExponentialHistogram().GetDataPoints()) + len(m.GetSummary().GetDataPoints())
}

// unitScale is the factor from a metric's unit to milliseconds.
func unitScale(unit string) (float64, bool) {
	switch unit {
	case "s":
		return 1000, true
	case "ms":
		return 1, true
	}
	return 0, false
}

// mapPoint builds the calls of one delta histogram point, or reports false
// when the point is malformed, a notification's, or its calls would fail an
// item rule. The caller has checked the count against the request's item
// budget: Durations has count entries.
func mapPoint(p *metricspb.HistogramDataPoint, resource []*commonpb.KeyValue, resHash []byte, scale float64, now time.Time) (PointCalls, bool) {
	attrs := p.GetAttributes()
	method := stringAttr(attrs, attrMethod)
	end := p.GetTimeUnixNano()
	if method == "" || isNotification(method) || end == 0 || end > math.MaxInt64 || p.GetStartTimeUnixNano() > end {
		return PointCalls{}, false
	}
	count := p.GetCount()
	bounds, counts := p.GetExplicitBounds(), p.GetBucketCounts()
	it := analytics.Item{
		Timestamp:       time.Unix(0, int64(end)),
		SessionID:       firstNonEmpty(stringAttr(attrs, attrSessionID), stringAttr(resource, attrSessionID)),
		Method:          method,
		Name:            firstAttr(attrs, attrToolName, attrOldToolName, attrPromptName, attrOldPromptName, attrResourceURI),
		ErrorType:       stringAttr(attrs, attrErrorType),
		ClientName:      stringAttr(attrs, attrClientName),
		ClientVersion:   stringAttr(attrs, attrClientVersion),
		ServerVersion:   firstNonEmpty(stringAttr(resource, attrServiceVersion), stringAttr(attrs, attrSentryServerVersion)),
		ProtocolVersion: firstNonEmpty(stringAttr(attrs, attrProtocolVer), stringAttr(resource, attrProtocolVer)),
		UserID:          firstNonEmpty(firstAttr(attrs, attrUserID, attrEndUserID), firstAttr(resource, attrUserID, attrEndUserID)),
		Attributes:      copyAttributes(attrs, resource),
	}
	if it.ErrorType != "" {
		// From error.type alone (points carry no message), before
		// Normalize, so the full derivation decides.
		it.ErrorKind = analytics.DeriveErrorKind(method, it.ErrorType, "")
	}
	it.Normalize()
	pc := PointCalls{Template: it}
	if count == 0 {
		return pc, true
	}
	durations, ok := bucketDurations(count, p, bounds, counts, scale)
	if !ok {
		return PointCalls{}, false
	}
	for _, d := range durations {
		check := it
		check.DurationMs = d
		if !check.Validate(now) {
			return PointCalls{}, false
		}
	}
	pc.Template.ID = pointID(resHash, p, attrs)
	pc.Durations = expandDurations(durations, counts, count)
	return pc, true
}

// bucketDurations returns one representative duration (ms) per bucket, or,
// without buckets, one for the point (its mean, nil when it has no sum).
// It reports false when the buckets do not add up to the count.
func bucketDurations(count uint64, p *metricspb.HistogramDataPoint, bounds []float64, counts []uint64, scale float64) ([]*float64, bool) {
	if len(counts) == 0 {
		if p.Sum == nil {
			return []*float64{nil}, true
		}
		d := p.GetSum() / float64(count) * scale
		return []*float64{&d}, true
	}
	if len(counts) != len(bounds)+1 {
		return nil, false
	}
	var total uint64
	for _, c := range counts {
		if total+c < total {
			return nil, false
		}
		total += c
	}
	if total != count {
		return nil, false
	}
	out := make([]*float64, len(counts))
	for i := range counts {
		var v float64
		switch {
		case len(bounds) == 0:
			if p.Sum == nil {
				continue
			}
			v = p.GetSum() / float64(count)
		case i == 0:
			v = bounds[0] / 2
		case i == len(bounds):
			v = bounds[len(bounds)-1]
		default:
			v = (bounds[i-1] + bounds[i]) / 2
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		d := max(v, 0) * scale
		out[i] = &d
	}
	return out, true
}

// expandDurations lists one duration per call: each bucket's, as many
// times as its count (one per call, the point's when it has no buckets).
func expandDurations(perBucket []*float64, counts []uint64, count uint64) []*float64 {
	out := make([]*float64, 0, count)
	if len(counts) == 0 {
		for range count {
			out = append(out, perBucket[0])
		}
		return out
	}
	for i, c := range counts {
		for range c {
			out = append(out, perBucket[i])
		}
	}
	return out
}

// pointID hashes what identifies a data point across retries of the same
// export: its resource, start and end times and attributes. The calls of
// the point append their index.
func pointID(resHash []byte, p *metricspb.HistogramDataPoint, attrs []*commonpb.KeyValue) string {
	h := sha256.New()
	h.Write([]byte(metricOperationDuration))
	h.Write(resHash)
	var t [16]byte
	binary.BigEndian.PutUint64(t[:8], p.GetStartTimeUnixNano())
	binary.BigEndian.PutUint64(t[8:], p.GetTimeUnixNano())
	h.Write(t[:])
	h.Write(hashAttributes(attrs))
	return "m" + hex.EncodeToString(h.Sum(nil)[:20])
}

// hashAttributes hashes a set of attributes independently of their order.
func hashAttributes(attrs []*commonpb.KeyValue) []byte {
	sorted := make([]*commonpb.KeyValue, len(attrs))
	copy(sorted, attrs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].GetKey() < sorted[j].GetKey() })
	h := sha256.New()
	opts := proto.MarshalOptions{Deterministic: true}
	for _, kv := range sorted {
		b, _ := opts.Marshal(kv)
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return h.Sum(nil)
}

// The parts of a metrics response's error_message, one per reason.
var rejectionReasons = []struct {
	n   func(MetricsRejections) int
	why string
}{
	{func(r MetricsRejections) int { return r.Cumulative }, "cumulative: only delta temporality is read (set the exporter's temporality preference to delta, e.g. OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta); a cumulative series would need its previous point, which another instance or a restart loses"},
	{func(r MetricsRejections) int { return r.SpansWin }, "skipped: their resource (service.name, service.instance.id) sent MCP spans in the last 24 hours, and calls are counted from spans"},
	{func(r MetricsRejections) int { return r.Unit }, "with a unit other than s or ms"},
	{func(r MetricsRejections) int { return r.OverBudget }, fmt.Sprintf("over the request's budget of %d calls (lower the export interval)", analytics.MaxBatchItems)},
	{func(r MetricsRejections) int { return r.Invalid }, "invalid (no mcp.method.name, a notification, buckets not adding up to the count, or failing an ingest item rule such as a timestamp older than 30 days)"},
	{func(r MetricsRejections) int { return r.NotRead }, "not stored: only the histogram mcp.server.operation.duration is read (as calls); other metrics are accepted so exporters see no errors, and ignored"},
}

// EncodeMetricsResponse encodes the ExportMetricsServiceResponse of a
// metrics export: the rejected data points in partial_success with why, and
// duplicates (calls of a retried export already received, dropped) as a
// warning; left unset when there is nothing to say.
func EncodeMetricsResponse(rej MetricsRejections, duplicates int, contentType string) ([]byte, error) {
	resp := &colmetricspb.ExportMetricsServiceResponse{}
	var parts []string
	for _, r := range rejectionReasons {
		if n := r.n(rej); n > 0 {
			parts = append(parts, fmt.Sprintf("%d data point(s) %s", n, r.why))
		}
	}
	if duplicates > 0 {
		parts = append(parts, fmt.Sprintf("%d call(s) already received (a retried export) dropped as duplicates", duplicates))
	}
	if len(parts) > 0 {
		resp.PartialSuccess = &colmetricspb.ExportMetricsPartialSuccess{
			RejectedDataPoints: int64(rej.Total()),
			ErrorMessage:       strings.Join(parts, "; "),
		}
	}
	return marshal(resp, contentType)
}
