package otlp

import (
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

// A request with more than MaxSpansPerRequest spans is refused before
// decoding, in both encodings; one at the limit is decoded.
func TestSpanLimit(t *testing.T) {
	protoBody := func(perScope ...int) []byte {
		rs := &tracepb.ResourceSpans{}
		for _, n := range perScope {
			ss := &tracepb.ScopeSpans{}
			for i := 0; i < n; i++ {
				ss.Spans = append(ss.Spans, &tracepb.Span{})
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{rs, rs}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	jsonBody := func(n int) []byte {
		return []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}]}]}`)
	}
	half := MaxSpansPerRequest / 2
	cases := []struct {
		name string
		body []byte
		ct   string
		over bool
	}{
		{"protobuf at the limit", protoBody(half-1, 1), ContentTypeProtobuf, false},
		{"protobuf over", protoBody(half, 1), ContentTypeProtobuf, true},
		{"json at the limit", jsonBody(MaxSpansPerRequest), ContentTypeJSON, false},
		{"json over", jsonBody(MaxSpansPerRequest + 1), ContentTypeJSON, true},
	}
	for _, c := range cases {
		_, err := Decode(c.body, c.ct)
		if over := telemetry.ErrorCode(err) == telemetry.ETOOMANYITEMS; over != c.over || (!c.over && err != nil) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if n := protoSpanCount(protoBody(3, 4), 100); n != 14 {
		t.Errorf("protobuf count %d, want 14", n)
	}
}
