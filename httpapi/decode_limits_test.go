package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpscope/telemetry/accounts"
)

// ingestKey signs up, registers an MCP and returns an ingest key for it.
func ingestKey(t *testing.T, s *Server) string {
	t.Helper()
	m := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("limits"), "Limits"), 201, "")
	token := m["token"].(string)
	mcp := expect(t, s, "POST", "/v1/mcps", token, `{"name":"limits"}`, 201, "")
	key := expect(t, s, "POST", "/v1/mcps/"+mcp["id"].(string)+"/keys", token, `{"name":"k"}`, 201, "")
	return key["key"].(string)
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func postRaw(s *Server, path, key, contentType string, body []byte, gz bool) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// A small gzip body that inflates to a megabyte of empty items is refused
// with 413 too_many_items (counted, never decoded); so is an OTLP body of
// too many empty spans.
func TestBombsAreRefusedBeforeDecoding(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	key := ingestKey(t, s)
	bomb := []byte(`{"items":[` + strings.TrimSuffix(strings.Repeat("{},", (1<<20-20)/3), ",") + `]}`)
	body := gzipped(t, bomb)
	if len(body) > 4096 {
		t.Fatalf("the bomb is %d bytes compressed", len(body))
	}
	rec := postRaw(s, "/v1/ingest", key, "application/json", body, true)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), `"too_many_items"`) {
		t.Fatalf("gzip bomb: %d %s", rec.Code, rec.Body.String())
	}
	spans := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.TrimSuffix(strings.Repeat("{},", 20_000), ",") + `]}]}]}`)
	rec = postRaw(s, "/v1/otlp/v1/traces", key, "application/json", gzipped(t, spans), true)
	if rec.Code != 413 {
		t.Fatalf("OTLP empty spans: %d %s", rec.Code, rec.Body.String())
	}
	// A valid batch still goes through.
	rec = postRaw(s, "/v1/ingest", key, "application/json", []byte(`{"items":[]}`), false)
	if rec.Code != 202 {
		t.Fatalf("empty batch: %d %s", rec.Code, rec.Body.String())
	}
}

// When the decode budget is taken, a body waits briefly, then gets 503
// unavailable with Retry-After; once room is free it is served.
func TestDecodeBudget(t *testing.T) {
	t.Parallel()
	opts, _, _ := accountOptions(t, accounts.AuthPolicy{})
	opts.DecodeBudgetBytes = 1 << 20
	s := New(opts)
	key := ingestKey(t, s)
	if err := s.decoding.Acquire(context.Background(), 1<<20); err != nil {
		t.Fatal(err)
	}
	rec := postRaw(s, "/v1/ingest", key, "application/json", []byte(`{"items":[]}`), false)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"unavailable"`) {
		t.Fatalf("over budget: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	s.decoding.Release(1 << 20)
	if rec := postRaw(s, "/v1/ingest", key, "application/json", []byte(`{"items":[]}`), false); rec.Code != 202 {
		t.Fatalf("after release: %d %s", rec.Code, rec.Body.String())
	}
}
