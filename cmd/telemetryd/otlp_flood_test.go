package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestOTLPElementFloodRefused sends one span with 350,000 empty events
// (about 1 KB gzipped; 53 MiB decoded in protobuf; 340,000 in OTLP/JSON,
// some 100 MiB decoded)
// in both encodings: each is refused with 413 before it is decoded, and
// the service allocates a small part of what decoding would (the inflated
// body, the count), while an ordinary request is still taken.
func TestOTLPElementFloodRefused(t *testing.T) {
	t.Parallel()
	_, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	_, _, key := a.newTenant("flood")

	span := &tracepb.Span{TraceId: bytes.Repeat([]byte{7}, 16), SpanId: bytes.Repeat([]byte{1}, 8), Name: "tools/call x", Kind: tracepb.Span_SPAN_KIND_SERVER}
	for i := 0; i < 350_000; i++ {
		span.Events = append(span.Events, &tracepb.Span_Event{})
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{span}}}}}}
	pb, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	js := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"07070707070707070707070707070707","spanId":"0101010101010101",` +
		`"name":"tools/call x","kind":2,"events":[` + strings.Repeat(`{},`, 339_999) + `{}]}]}]}]}`) // 340,000: under 1 MiB
	post := func(body []byte, ct string) (int, string, time.Duration) {
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		w.Write(body)
		w.Close()
		r, _ := http.NewRequest("POST", base+"/v1/otlp/v1/traces", bytes.NewReader(gz.Bytes()))
		r.Header.Set("Content-Type", ct)
		r.Header.Set("Content-Encoding", "gzip")
		r.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(answer), time.Since(start)
	}
	for _, c := range []struct {
		body []byte
		ct   string
	}{{pb, "application/x-protobuf"}, {js, "application/json"}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		status, answer, took := post(c.body, c.ct)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes, refused %d in %v, %d KiB allocated", c.ct, len(c.body), status, took, alloc>>10)
		if status != 413 || !strings.Contains(answer, "to decode") {
			t.Fatalf("%s: status %d %q, want 413 for its decoded size", c.ct, status, answer)
		}
		if alloc > 16<<20 {
			t.Errorf("%s: refusing allocated %d MiB", c.ct, alloc>>20)
		}
	}
	// An ordinary request is taken.
	ok, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{
		Spans: []*tracepb.Span{{TraceId: span.TraceId, SpanId: span.SpanId, Name: "x", Events: span.Events[:10]}}}}}}})
	if status, _, _ := post(ok, "application/x-protobuf"); status != 200 {
		t.Fatalf("an ordinary request: %d", status)
	}
}
