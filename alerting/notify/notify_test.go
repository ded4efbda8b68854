package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

func TestInternal(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"::1": true, "fe80::1": true, "fc00::1": true, "0.0.0.0": true, "100.64.0.1": true, "::ffff:127.0.0.1": true,
		"64:ff9b::a9fe:a9fe": true, "224.0.0.1": true,
		"34.120.0.1": false, "162.159.128.233": false, "2606:4700::6810:84e5": false,
	} {
		if got := Internal(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Internal(%s) = %v, want %v", addr, got, want)
		}
	}
}

// Without a proxy, the client refuses a resolved loopback address at
// connect time; it follows no redirect.
func TestHTTPClientRefusesInternal(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	c, err := Outbound{}.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = PostJSON(context.Background(), c, srv.URL, []byte("{}"))
	if alerting.ErrorText(err) != "internal_address_refused" || hits != 0 {
		t.Fatalf("loopback post: %v, %d hits", err, hits)
	}
	// Behind a proxy the proxy decides; redirects are answers, not followed.
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
	}))
	defer redirect.Close()
	c, err = Outbound{ProxyURL: "http://" + redirect.Listener.Addr().String()}.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	status, _, _, err := PostJSON(context.Background(), c, "http://example.invalid/x", []byte("{}"))
	if err != nil || status != http.StatusFound {
		t.Fatalf("redirect: status %d, %v; want the 302 itself", status, err)
	}
}

func TestRetrier(t *testing.T) {
	tests := []struct {
		status     int
		header     string
		retry      bool
		ok         bool
		retryAfter time.Duration
	}{
		{200, "", false, true, 0},
		{204, "", false, true, 0},
		{400, "", false, false, 0},
		{404, "", false, false, 0},
		{408, "", true, false, 0},
		{429, "7", true, false, 7 * time.Second},
		{429, "", true, false, time.Second},
		{429, "0.25", true, false, 250 * time.Millisecond},
		{500, "", true, false, 0},
		{503, "2", true, false, 2 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("Retry-After", tt.header)
		}
		retry, err := Retrier(tt.status, h, "")
		if retry != tt.retry || (err == nil) != tt.ok {
			t.Errorf("%d: retry %v err %v", tt.status, retry, err)
		}
		if se, _ := err.(*alerting.SendError); se != nil && se.RetryAfter != tt.retryAfter {
			t.Errorf("%d %q: RetryAfter %s, want %s", tt.status, tt.header, se.RetryAfter, tt.retryAfter)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	f.Add("120")
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("-1")
	f.Add("1e300")
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Retry-After": {v}}
		if d := RetryAfter(h, time.Now()); d < 0 || d > 24*time.Hour {
			t.Fatalf("RetryAfter(%q) = %s", v, d)
		}
	})
}
