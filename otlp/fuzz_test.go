package otlp

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// FuzzDecode feeds arbitrary bodies to both decoders. A body either decodes
// or fails with EBADREQUEST (never a panic or another code); what decodes
// maps every span to exactly one item or one rejection, and every item
// passes the ingest rules.
func FuzzDecode(f *testing.F) {
	pb, err := proto.Marshal(request(nil, serverSpan()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pb, false)
	f.Add([]byte(otlpJSON), true)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"S/kvNXezTaajzpKdDg5HNg=="}]}]}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		ct := ContentTypeProtobuf
		if asJSON {
			ct = ContentTypeJSON
		}
		req, err := Decode(body, ct)
		if err != nil {
			var e *telemetry.Error
			if !errors.As(err, &e) || e.Code != telemetry.EBADREQUEST {
				t.Fatalf("Decode error %v; want EBADREQUEST", err)
			}
			return
		}
		spans := 0
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				spans += len(ss.GetSpans())
			}
		}
		items, rejected := Map(req, now)
		if len(items)+rejected != spans {
			t.Fatalf("%d items + %d rejected != %d spans", len(items), rejected, spans)
		}
		for _, it := range items {
			if !it.Validate(now) {
				t.Fatalf("Map returned an invalid item %+v", it)
			}
		}
		if _, err := EncodeResponse(rejected, ct); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDecodeMetrics feeds arbitrary bodies to the metrics decoder. A body
// decodes or fails with EBADREQUEST or ETOOLARGE; what decodes maps every
// data point to calls or one rejection, within the call budget, and every
// call passes the ingest rules.
func FuzzDecodeMetrics(f *testing.F) {
	p := histPoint([]float64{0.01, 0.1}, []uint64{1, 2, 1}, kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", "t"))
	pb, err := proto.Marshal(metricsRequest(pythonResource, durationMetric("s", delta, p)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pb, false)
	f.Add([]byte(shinzoMetrics), true)
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		ct := ContentTypeProtobuf
		if asJSON {
			ct = ContentTypeJSON
		}
		req, err := DecodeMetrics(body, ct)
		if err != nil {
			if c := telemetry.ErrorCode(err); c != telemetry.EBADREQUEST && c != telemetry.ETOOLARGE {
				t.Fatalf("DecodeMetrics error %v; want EBADREQUEST or ETOOLARGE", err)
			}
			return
		}
		points := 0
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					points += dataPoints(m)
				}
			}
		}
		calls, rej := MapMetrics(req, now, 1000, func(string) bool { return false })
		var items []analytics.Item
		for _, c := range calls {
			items = c.Expand(items)
		}
		if len(calls)+rej.Total() > points || len(items) > 1000 {
			t.Fatalf("%d points read + %+v rejected of %d; %d calls", len(calls), rej, points, len(items))
		}
		for _, it := range items {
			if !it.Validate(now) {
				t.Fatalf("an invalid call %+v", it)
			}
		}
	})
}
