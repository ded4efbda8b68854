package web

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler(t *testing.T) {
	h := Handler()
	index, err := fs.ReadFile(static, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		method    string
		target    string
		status    int
		ctype     string // prefix
		wantIndex bool
	}{
		{"index at root", "GET", "/app/", 200, "text/html", true},
		{"index.html by name", "GET", "/app/index.html", 200, "text/html", true},
		{"module", "GET", "/app/app.js", 200, "text/javascript", false},
		{"page module", "GET", "/app/pages/login.js", 200, "text/javascript", false},
		{"vendored chart library", "GET", "/app/vendor/uPlot.iife.min.js", 200, "text/javascript", false},
		{"stylesheet", "GET", "/app/app.css", 200, "text/css", false},
		{"icon", "GET", "/app/favicon.svg", 200, "image/svg+xml", false},
		{"deep link", "GET", "/app/mcps/m1/overview?preset=30", 200, "text/html", true},
		{"deep link to a directory name", "GET", "/app/pages", 200, "text/html", true},
		{"deep link to a tool named like a file", "GET", "/app/mcps/m1/tools/export.csv", 200, "text/html", true},
		{"deep link with an encoded slash", "GET", "/app/mcps/m1/tools/a%2Fb", 200, "text/html", true},
		{"missing asset at top level", "GET", "/app/nope.js", 404, "application/problem+json", false},
		{"missing asset in an asset directory", "GET", "/app/vendor/nope.css", 404, "application/problem+json", false},
		{"no escape from static", "GET", "/app/../embed.go", 404, "application/problem+json", false},
		{"outside the prefix", "GET", "/other", 404, "application/problem+json", false},
		{"write method", "POST", "/app/", 405, "application/problem+json", false},
		{"HEAD", "HEAD", "/app/app.js", 200, "text/javascript", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := get(t, h, tc.method, tc.target, nil)
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d; body %q", rec.Code, tc.status, rec.Body.String())
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
				t.Errorf("Content-Type = %q, want prefix %q", ct, tc.ctype)
			}
			if tc.wantIndex {
				if rec.Body.String() != string(index) {
					t.Errorf("body is not index.html")
				}
				if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
					t.Errorf("Cache-Control = %q, want no-cache", cc)
				}
				if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
					t.Errorf("Content-Security-Policy = %q", csp)
				}
			}
			if tc.status == 404 || tc.status == 405 {
				var p problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
					t.Fatalf("not a problem document: %v", err)
				}
				if p.Status != tc.status || p.Code == "" || p.Detail == "" {
					t.Errorf("problem = %+v", p)
				}
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD returned a body of %d bytes", rec.Body.Len())
			}
		})
	}
}

func TestHandlerRedirectsBarePrefix(t *testing.T) {
	rec := get(t, Handler(), "GET", "/app?invite=x", nil)
	if rec.Code != http.StatusMovedPermanently {
		t.Fatalf("status = %d, want 301", rec.Code)
	}
	if loc := rec.Header().Get("Location"); loc != "/app/?invite=x" {
		t.Errorf("Location = %q", loc)
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	h := Handler()
	first := get(t, h, "GET", "/app/app.js", nil)
	etag := first.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	again := get(t, h, "GET", "/app/app.js", map[string]string{"If-None-Match": etag})
	if again.Code != http.StatusNotModified {
		t.Fatalf("status = %d, want 304", again.Code)
	}
	other := get(t, h, "GET", "/app/app.css", nil).Header().Get("ETag")
	if other == etag {
		t.Error("different files share an ETag")
	}
}

var (
	htmlRef   = regexp.MustCompile(`(?:src|href)="(/app/[^"]+)"`)
	importRef = regexp.MustCompile(`(?m)(?:^import\s[^'"]*|^export\s[^'"]*\sfrom\s|import\()\s*['"]([^'"]+)['"]`)
)

// TestAssetReferencesResolve catches a renamed or missing module without a
// browser: every /app/ URL in index.html and every relative import in every
// module must name an embedded file.
func TestAssetReferencesResolve(t *testing.T) {
	h, err := newHandler(static)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range htmlRef.FindAllStringSubmatch(string(h.index.body), -1) {
		rel := strings.TrimPrefix(m[1], Prefix)
		if _, ok := h.files[rel]; !ok {
			t.Errorf("index.html refers to missing %s", m[1])
		}
	}
	checked := 0
	for name, f := range h.files {
		if path.Ext(name) != ".js" || strings.HasPrefix(name, "vendor/") {
			continue
		}
		for _, m := range importRef.FindAllStringSubmatch(string(f.body), -1) {
			spec := m[1]
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
				t.Errorf("%s imports %q: only relative imports work without a bundler", name, spec)
				continue
			}
			target := path.Join(path.Dir(name), spec)
			if _, ok := h.files[target]; !ok {
				t.Errorf("%s imports missing %s", name, target)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d imports found; is the import pattern still right?", checked)
	}
}
