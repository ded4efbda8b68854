package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
)

// signIn posts a failing login from remote (host:port), with an optional
// X-Forwarded-For, and returns the status and Retry-After.
func signIn(t *testing.T, s *Server, remote, xff string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/auth/login", strings.NewReader(`{"email":"`+uniqueEmail("nobody")+`","password":"wrong password"}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = remote
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Retry-After")
}

func TestSignInIsLimitedPerClientAddress(t *testing.T) {
	t.Parallel()
	opts, _, _ := accountOptions(t, accounts.AuthPolicy{})
	opts.ClientLimit = accounts.NewAttemptLimiter(3, time.Minute, 100)
	s := New(opts)
	for i := 0; i < 3; i++ {
		if code, _ := signIn(t, s, "203.0.113.5:4000", ""); code != 401 {
			t.Fatalf("attempt %d: %d", i+1, code)
		}
	}
	code, retry := signIn(t, s, "203.0.113.5:4001", "198.51.100.1")
	if code != 429 || retry == "" || retry == "0" {
		t.Fatalf("fourth attempt from one address: %d, Retry-After %q", code, retry)
	}
	// Signup counts against the same limit; httptest's default peer
	// (192.0.2.1) is another address.
	if rec, m := do(t, s, "POST", "/v1/auth/signup", signupBody(uniqueEmail("late"), "Late")); rec.Code != 201 {
		t.Fatalf("signup from another address: %d %v", rec.Code, m)
	}
	if code, _ := signIn(t, s, "203.0.113.6:4000", ""); code != 401 {
		t.Fatalf("another client: %d", code)
	}
	// IPv6 clients are counted per /64.
	for i := 0; i < 3; i++ {
		signIn(t, s, "[2001:db8:1:2::"+string(rune('a'+i))+"]:443", "")
	}
	if code, _ := signIn(t, s, "[2001:db8:1:2::ff]:443", ""); code != 429 {
		t.Fatalf("same /64: %d", code)
	}

	// Behind a trusted proxy, X-Forwarded-For names the client.
	opts.ClientLimit = accounts.NewAttemptLimiter(2, time.Minute, 100)
	opts.TrustedProxies = []string{"10.0.0.0/8"}
	s = New(opts)
	for i := 0; i < 2; i++ {
		if code, _ := signIn(t, s, "10.1.2.3:5000", "198.51.100.7"); code != 401 {
			t.Fatalf("proxied attempt %d: %d", i+1, code)
		}
	}
	if code, _ := signIn(t, s, "10.1.2.3:5000", "198.51.100.7"); code != 429 {
		t.Fatalf("proxied client over the limit: %d", code)
	}
	if code, _ := signIn(t, s, "10.1.2.3:5000", "198.51.100.8"); code != 401 {
		t.Fatalf("another client behind the same proxy: %d", code)
	}
}
