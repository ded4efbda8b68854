package otlp

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
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
