package probe_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/probe"
)

// goServer serves a go-sdk MCP server over Streamable HTTP on loopback,
// counting the requests by HTTP method.
func goServer(t testing.TB, stateless bool) (string, map[string]*atomic.Int64) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "probe-target", Version: "3.2.1"}, nil)
	type args struct {
		Q string `json:"q"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "search the docs"}, func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	counts := map[string]*atomic.Int64{http.MethodPost: {}, http.MethodDelete: {}, http.MethodGet: {}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := counts[r.Method]; c != nil {
			c.Add(1)
		}
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, probe.ClientName+"/") {
			t.Errorf("User-Agent %q", ua)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", counts
}

func TestCheckGoSDK(t *testing.T) {
	c := &probe.Checker{AllowPrivate: true, Version: "test"}
	for _, stateless := range []bool{false, true} {
		url, counts := goServer(t, stateless)
		res := c.Check(context.Background(), probe.Target{URL: url, Timeout: 5 * time.Second})
		if !res.OK {
			t.Fatalf("stateless=%v: %+v", stateless, res)
		}
		// A stateful go-sdk server speaks the 2026-07-28 protocol only
		// stateless; stateful, the check falls back to initialize and
		// ends the session with a DELETE.
		want := "2025-11-25"
		if stateless {
			want = "2026-07-28"
		}
		if res.ProtocolVersion != want || res.ServerVersion != "3.2.1" || len(res.Tools) != 1 || res.Tools[0].Name != "search" || len(res.SchemaHash) != 64 {
			t.Fatalf("stateless=%v: %+v", stateless, res)
		}
		if !stateless && counts[http.MethodDelete].Load() != 1 {
			t.Errorf("stateful: %d DELETEs, want 1", counts[http.MethodDelete].Load())
		}
		t.Logf("stateless=%v: %+v posts=%d deletes=%d gets=%d", stateless, res, counts["POST"].Load(), counts["DELETE"].Load(), counts["GET"].Load())
	}
}

func TestCheckFailures(t *testing.T) {
	c := &probe.Checker{AllowPrivate: true}
	// Nothing listens: connect.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	hang := make(chan struct{})
	hanging := serve(t, func(http.ResponseWriter, *http.Request) { <-hang })
	t.Cleanup(func() { close(hang) }) // before the server's Close, which waits for the handler
	cases := []struct {
		name string
		url  string
		kind string
	}{
		{"refused", "http://" + addr + "/mcp", alerting.ProbeErrConnect},
		{"dns", "http://no-such-host.invalid/mcp", alerting.ProbeErrDNS},
		{"auth", serve(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }), alerting.ProbeErrAuth},
		{"status", serve(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }), alerting.ProbeErrHTTPStatus},
		{"protocol", serve(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"hello": "world"}`))
		}), alerting.ProbeErrProtocol},
		{"timeout", hanging, alerting.ProbeErrTimeout},
		{"tls", serveTLS(t), alerting.ProbeErrTLS},
	}
	for _, tc := range cases {
		start := time.Now()
		res := c.Check(context.Background(), probe.Target{URL: tc.url, Timeout: 1500 * time.Millisecond})
		if res.OK || res.ErrorKind != tc.kind {
			t.Errorf("%s: got %q %q, want %s", tc.name, res.ErrorKind, res.Error, tc.kind)
		}
		if strings.Contains(res.ErrorText(), "127.0.0.1") {
			t.Errorf("%s: error %q quotes the URL", tc.name, res.ErrorText())
		}
		if time.Since(start) > 6*time.Second { // the 1.5 s timeout, with room for a loaded machine
			t.Errorf("%s: took %v", tc.name, time.Since(start))
		}
	}
}

func serve(t *testing.T, h http.HandlerFunc) string {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func serveTLS(t *testing.T) string {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// Without allow_private, loopback, private, link-local and metadata
// addresses are refused at create (CheckURL) and at run (the dialer),
// a host name resolving to loopback included.
func TestGuard(t *testing.T) {
	c := &probe.Checker{}
	url, counts := goServer(t, true)
	for _, u := range []string{url, strings.Replace(url, "127.0.0.1", "localhost", 1), "http://10.1.2.3/mcp",
		"http://169.254.169.254/latest", "http://[::1]:80/mcp", "http://192.168.0.1/", "http://[fe80::1]/"} {
		err := c.CheckURL(context.Background(), u)
		if telemetry.ErrorCode(err) != telemetry.EINVALID {
			t.Errorf("CheckURL(%s) = %v, want invalid", u, err)
		}
	}
	for _, u := range []string{url, strings.Replace(url, "127.0.0.1", "localhost", 1)} {
		res := c.Check(context.Background(), probe.Target{URL: u, Timeout: 2 * time.Second})
		if res.OK || res.ErrorKind != alerting.ProbeErrConnect || !strings.Contains(res.Error, "refused") {
			t.Errorf("Check(%s) = %+v, want connect refused", u, res)
		}
	}
	if n := counts["POST"].Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	if err := c.CheckURL(context.Background(), "http://93.184.215.14/mcp"); err != nil {
		t.Fatalf("public address: %v", err)
	}
}

// BenchmarkCheck is one check of a stateless go-sdk server on loopback
// (client and server in this process): the prober's cost per check.
func BenchmarkCheck(b *testing.B) {
	url, _ := goServer(b, true)
	c := &probe.Checker{AllowPrivate: true}
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Check(context.Background(), probe.Target{URL: url, Timeout: 5 * time.Second}); !res.OK {
			b.Fatal(res)
		}
	}
}
