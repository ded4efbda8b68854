// Package web serves the built-in dashboard: plain ES modules, CSS and one
// vendored chart library, embedded into the binary so the service needs no
// build step, no CDN and no files on disk to show it. The dashboard is a pure
// client of the public /v1 API; nothing here talks to a store.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/mcpscope/telemetry"
)

// Prefix is the URL path the dashboard lives under. index.html refers to its
// assets by absolute /app/ paths, so deep links such as /app/mcps/x/tools
// load the same files as /app/.
const Prefix = "/app/"

//go:embed static
var static embed.FS

// contentTypes is fixed rather than read from the host's mime.types, which
// differs between machines (some still say application/x-javascript).
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".svg":   "image/svg+xml",
	".json":  "application/json",
	".map":   "application/json",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".txt":   "text/plain; charset=utf-8",
	".woff2": "font/woff2",
}

// indexPolicy keeps scripts to our own origin: the dashboard holds a session
// token in localStorage, so injected script would be the worst bug it could
// have. Inline styles stay allowed because uPlot positions its parts with them.
const indexPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type file struct {
	name  string
	body  []byte
	etag  string
	ctype string
}

type handler struct {
	files map[string]*file // by path relative to static/, e.g. "vendor/uPlot.min.css"
	dirs  map[string]bool  // directories relative to static/, "." for the root
	index *file
}

// Handler serves the dashboard for every path under Prefix. A path naming an
// embedded file gets that file; any other path gets index.html, so the
// client-side router can handle deep links, except a missing file with an
// extension in a directory that holds assets, which is a 404: a broken
// <script src> must fail loudly rather than receive HTML. /app redirects to
// /app/. Only GET and HEAD are allowed.
//
// Every response says Cache-Control: no-cache with a strong ETag, so a browser
// revalidates cheaply (304) and never runs assets from an older release.
func Handler() http.Handler {
	h, err := newHandler(static)
	if err != nil {
		// The embedded tree is fixed at build time and covered by tests.
		panic("web: embedded dashboard is broken: " + err.Error())
	}
	return h
}

func newHandler(fsys fs.FS) (*handler, error) {
	root, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, err
	}
	h := &handler{files: map[string]*file{}, dirs: map[string]bool{}}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			h.dirs[p] = true
			return nil
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.files[p] = &file{
			name:  p,
			body:  body,
			etag:  `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`,
			ctype: contentType(p),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.index = h.files["index.html"]
	if h.index == nil {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ct, ok := contentTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeProblem(w, http.StatusMethodNotAllowed, telemetry.EMETHODNOTALLOWED, "The dashboard only answers GET and HEAD.")
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		target := Prefix
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
		return
	}
	if !strings.HasPrefix(r.URL.Path, Prefix) {
		writeProblem(w, http.StatusNotFound, "not_found", "No such page.")
		return
	}
	// Cleaning against "/" keeps "..", "//" and "." from leaving static/.
	rel := path.Clean("/" + strings.TrimPrefix(r.URL.Path, Prefix))[1:]
	if f, ok := h.files[rel]; ok && rel != "index.html" {
		h.serve(w, r, f)
		return
	}
	if rel != "" && rel != "index.html" && path.Ext(rel) != "" && h.dirs[path.Dir(rel)] {
		writeProblem(w, http.StatusNotFound, "not_found", "No such file in the dashboard.")
		return
	}
	w.Header().Set("Content-Security-Policy", indexPolicy)
	// Signup links carry invite tokens in the query string; keep them out of
	// Referer headers sent anywhere.
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.serve(w, r, h.index)
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, f *file) {
	hdr := w.Header()
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", f.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	// A zero modtime makes ServeContent rely on the ETag alone.
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
}

// problem is the RFC 9457 document the API answers with.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// writeProblem answers like the API does (a problem document with a stable
// code), so a client sees one error format whichever part of the service it hit.
func writeProblem(w http.ResponseWriter, status int, code, detail string) {
	body, _ := json.Marshal(problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Code: code})
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
