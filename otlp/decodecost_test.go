package otlp

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

// costBodies are request shapes, cheap and typical, in both encodings.
func costBodies(t *testing.T, events, spans int) map[string][]byte {
	t.Helper()
	empty := serverSpan()
	for i := 0; i < events; i++ {
		empty.Events = append(empty.Events, &tracepb.Span_Event{})
	}
	var typical []*tracepb.Span
	for i := 0; i < spans; i++ {
		s := serverSpan()
		for j := 0; j < 17; j++ {
			s.Attributes = append(s.Attributes, kv(fmt.Sprintf("attr.%d", j), "value"))
		}
		s.Events = []*tracepb.Span_Event{{Name: "e", Attributes: []*commonpb.KeyValue{kv("k", 1)}}}
		typical = append(typical, s)
	}
	nested := serverSpan()
	for i := 0; i < events/10; i++ {
		arr := &commonpb.ArrayValue{}
		for j := 0; j < 8; j++ {
			arr.Values = append(arr.Values, &commonpb.AnyValue{})
		}
		nested.Attributes = append(nested.Attributes, &commonpb.KeyValue{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}})
	}
	out := map[string][]byte{}
	for name, req := range map[string]any{"empty events": request(nil, empty), "typical spans": request(nil, typical...), "nested arrays": request(nil, nested)} {
		m := req.(proto.Message)
		pb, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		js, err := protojson.Marshal(m) // base64 ids, which Decode takes too
		if err != nil {
			t.Fatal(err)
		}
		out[name+"/protobuf"], out[name+"/json"] = pb, js
	}
	return out
}

// allocated is the bytes f allocates.
func allocated(f func()) int64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return int64(b.TotalAlloc - a.TotalAlloc)
}

// TestDecodeCostCoversDecoding checks the price CheckDecodeCost puts on a
// body against what decoding it allocates, for the cheapest elements to
// send (empty events, empty array values) and for typical spans.
func TestDecodeCostCoversDecoding(t *testing.T) {
	for name, body := range costBodies(t, 20_000, 500) {
		ct := ContentTypeProtobuf
		if strings.HasSuffix(name, "/json") {
			ct = ContentTypeJSON
		}
		cost, err := CheckDecodeCost(body, ct)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := allocated(func() {
			if _, err := Decode(body, ct); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s: %d bytes, priced %d KiB, decoding allocated %d KiB", name, len(body), cost>>10, got>>10)
		if got > cost {
			t.Errorf("%s: priced %d bytes, decoding allocated %d", name, cost, got)
		}
	}
}

// TestDecodeCostRefusesFloods: one span of 350,000 empty events (700
// bytes of protobuf, 53 MiB decoded) is refused before decoding, in both
// encodings, cheaply.
func TestDecodeCostRefusesFloods(t *testing.T) {
	for name, body := range costBodies(t, 350_000, 0) {
		if !strings.HasPrefix(name, "empty events") {
			continue
		}
		ct := ContentTypeProtobuf
		if strings.HasSuffix(name, "/json") {
			ct = ContentTypeJSON
		}
		var err error
		got := allocated(func() { _, err = CheckDecodeCost(body, ct) })
		if telemetry.ErrorCode(err) != telemetry.ETOOLARGE {
			t.Fatalf("%s (%d bytes): %v", name, len(body), err)
		}
		if got > 64<<10 {
			t.Errorf("%s: counting allocated %d bytes", name, got)
		}
	}
}
