package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
)

type echoInput struct {
	Body struct {
		Name  string `json:"name" minLength:"1" maxLength:"10"`
		Count int    `json:"count,omitempty" minimum:"0"`
	}
}

type echoOutput struct {
	Body struct {
		Name string `json:"name"`
	}
}

func testServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	opts.LegacyHosts = append(opts.LegacyHosts, "old.example.com")
	opts.BaseURL = "https://api.example.com"
	s := New(opts)
	register(s, huma.Operation{OperationID: "test-echo", Method: http.MethodPost, Path: "/v1/test/echo"}, Public,
		func(ctx context.Context, in *echoInput) (*echoOutput, error) {
			switch in.Body.Name {
			case "panic":
				panic("secret internal detail")
			case "internal":
				return nil, errors.New("db password=hunter2 leaked?")
			case "conflict":
				return nil, telemetry.Errorf(telemetry.ECONFLICT, "It already exists.")
			case "limited":
				return nil, &telemetry.Error{Code: telemetry.ERATELIMITED, Message: "Slow down.", RetryAfter: 7}
			}
			out := &echoOutput{}
			out.Body.Name = in.Body.Name
			return out, nil
		})
	return s
}

func do(t *testing.T, s *Server, method, path, body string, hdr ...string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return rec, m
}

func TestProblemDocuments(t *testing.T) {
	t.Parallel()
	s := testServer(t, Options{})
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code                     string
	}{
		{"unknown route", "GET", "/v1/nope", "", nil, 404, "not_found"},
		{"unknown route html client", "GET", "/nope", "", []string{"Accept", "text/html"}, 404, "not_found"},
		{"trailing slash is not redirected", "POST", "/v1/test/echo/", `{"name":"a"}`, nil, 404, "not_found"},
		{"wrong method", "DELETE", "/v1/test/echo", "", nil, 405, "method_not_allowed"},
		{"malformed json", "POST", "/v1/test/echo", `{"name":`, nil, 400, "bad_request"},
		{"validation", "POST", "/v1/test/echo", `{"name":""}`, nil, 422, "invalid"},
		{"wrong type", "POST", "/v1/test/echo", `{"name":5}`, nil, 422, "invalid"},
		{"unknown field", "POST", "/v1/test/echo", `{"name":"a","extra":1}`, nil, 422, "invalid"},
		{"wrong content type", "POST", "/v1/test/echo", `name=a`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"oversized body", "POST", "/v1/test/echo", `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, nil, 413, "payload_too_large"},
		{"panic", "POST", "/v1/test/echo", `{"name":"panic"}`, nil, 500, "internal"},
		{"internal error", "POST", "/v1/test/echo", `{"name":"internal"}`, nil, 500, "internal"},
		{"domain error", "POST", "/v1/test/echo", `{"name":"conflict"}`, nil, 409, "conflict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, m := do(t, s, tc.method, tc.path, tc.body, tc.hdr...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("content type %q", ct)
			}
			if m["code"] != tc.code || m["type"] != "about:blank" || int(m["status"].(float64)) != tc.status || m["title"] == "" {
				t.Errorf("problem %v", m)
			}
			if rec.Header().Get("API-Version") != "1" {
				t.Errorf("API-Version %q", rec.Header().Get("API-Version"))
			}
			if strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "hunter2") {
				t.Errorf("internal detail leaked: %s", rec.Body.String())
			}
		})
	}
}

func TestValidationLocation(t *testing.T) {
	t.Parallel()
	s := testServer(t, Options{})
	_, m := do(t, s, "POST", "/v1/test/echo", `{"name":"far too long a name"}`)
	errs, _ := m["errors"].([]any)
	if len(errs) == 0 || errs[0].(map[string]any)["location"] != "body.name" {
		t.Fatalf("want location body.name, got %v", m)
	}
}

func TestRetryAfterFromDomainError(t *testing.T) {
	t.Parallel()
	s := testServer(t, Options{})
	rec, m := do(t, s, "POST", "/v1/test/echo", `{"name":"limited"}`)
	if rec.Code != 429 || m["code"] != "rate_limited" || rec.Header().Get("Retry-After") != "7" {
		t.Fatalf("got %d %v %q", rec.Code, m, rec.Header().Get("Retry-After"))
	}
}

func TestSuccessHeadersAndLegacyHost(t *testing.T) {
	t.Parallel()
	s := testServer(t, Options{})
	rec, m := do(t, s, "POST", "/v1/test/echo", `{"name":"ok"}`)
	if rec.Code != 200 || m["name"] != "ok" || rec.Header().Get("API-Version") != "1" || rec.Header().Get("Deprecation") != "" {
		t.Fatalf("got %d %v %v", rec.Code, m, rec.Header())
	}
	if _, ok := m["$schema"]; ok {
		t.Errorf("response carries $schema: %v", m)
	}
	req := httptest.NewRequest("GET", "/health", nil)
	req.Host = "old.example.com:443"
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Header().Get("Deprecation") != "true" || rec.Header().Get("Link") != `<https://api.example.com>; rel="successor-version"` {
		t.Fatalf("legacy headers missing: %v", rec.Header())
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("connection refused") }
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := New(Options{Logger: quiet, Checks: map[string]func(context.Context) error{"postgres": ok, "clickhouse": ok}})
	rec, m := do(t, s, "GET", "/health", "")
	if rec.Code != 200 || m["status"] != "ok" || m["checks"].(map[string]any)["clickhouse"] != "ok" {
		t.Fatalf("healthy: %d %v", rec.Code, m)
	}
	s = New(Options{Logger: quiet, Checks: map[string]func(context.Context) error{"postgres": ok, "clickhouse": down}})
	rec, m = do(t, s, "GET", "/health", "")
	checks := m["checks"].(map[string]any)
	if rec.Code != 503 || m["status"] != "degraded" || checks["clickhouse"] != "unavailable" || checks["postgres"] != "ok" {
		t.Fatalf("degraded: %d %v", rec.Code, m)
	}
}

func TestDocs(t *testing.T) {
	t.Parallel()
	s := testServer(t, Options{})
	rec, m := do(t, s, "GET", "/docs", "")
	if rec.Code != 200 || m["openapi"] != "3.1.0" {
		t.Fatalf("docs json: %d %.200s", rec.Code, rec.Body.String())
	}
	paths := m["paths"].(map[string]any)
	if _, ok := paths["/health"]; !ok {
		t.Errorf("health missing from %v", paths)
	}
	// Linters (redocly) want a licence and an explicit security list on
	// every operation: empty for public ones.
	if lic, _ := m["info"].(map[string]any)["license"].(map[string]any); lic["name"] == nil {
		t.Errorf("info names no licence: %v", m["info"])
	}
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			sec, ok := op.(map[string]any)["security"].([]any)
			access := op.(map[string]any)["x-access"]
			if !ok || (access == "public") != (len(sec) == 0) {
				t.Errorf("%s %s (%v): security %v", method, path, access, op.(map[string]any)["security"])
			}
		}
	}
	rec, _ = do(t, s, "GET", "/docs", "", "Accept", "text/html,application/xhtml+xml")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "/docs/assets/swagger-ui-bundle.js") || strings.Contains(rec.Body.String(), "cdn") {
		t.Fatalf("docs html: %d", rec.Code)
	}
	rec, _ = do(t, s, "GET", "/docs/assets/swagger-ui-bundle.js", "")
	if rec.Code != 200 || rec.Body.Len() < 100000 {
		t.Fatalf("asset: %d %d", rec.Code, rec.Body.Len())
	}
}

func TestAppAndRootRedirect(t *testing.T) {
	t.Parallel()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("app:" + r.URL.Path)) })
	s := testServer(t, Options{App: app})
	rec, _ := do(t, s, "GET", "/", "", "Accept", "text/html,*/*")
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/app/" {
		t.Fatalf("browser at /: %d %v", rec.Code, rec.Header())
	}
	rec, m := do(t, s, "GET", "/", "", "Accept", "application/json")
	if rec.Code != 404 || m["code"] != "not_found" {
		t.Fatalf("API client at /: %d %v", rec.Code, m)
	}
	rec, _ = do(t, s, "GET", "/app/mcps/x", "", "Accept", "text/html")
	if rec.Code != 200 || rec.Body.String() != "app:/app/mcps/x" {
		t.Fatalf("app: %d %q", rec.Code, rec.Body.String())
	}
	rec, m = do(t, s, "GET", "/elsewhere", "", "Accept", "text/html")
	if rec.Code != 404 || m["code"] != "not_found" {
		t.Fatalf("unknown path for a browser is still a JSON problem: %d", rec.Code)
	}
}
