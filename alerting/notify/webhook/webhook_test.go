package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
)

func TestConnectRefusesInternalAddresses(t *testing.T) {
	resolveTo := func(a string) alerting.ConnectEnv {
		return alerting.ConnectEnv{LookupHost: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}}
	}
	for _, c := range []struct {
		url string
		env alerting.ConnectEnv
	}{
		{"http://hooks.example.org/x", resolveTo("93.184.216.34")},
		{"https://127.0.0.1/x", alerting.ConnectEnv{}},
		{"https://[::1]:8443/x", alerting.ConnectEnv{}},
		{"https://169.254.169.254/latest/meta-data", alerting.ConnectEnv{}},
		{"https://10.1.2.3/x", alerting.ConnectEnv{}},
		{"https://localhost/x", alerting.ConnectEnv{}},
		{"https://metadata.google.internal/x", alerting.ConnectEnv{}},
		{"https://printer.local/x", alerting.ConnectEnv{}},
		{"https://user:pw@hooks.example.org/x", resolveTo("93.184.216.34")},
		{"https://hooks.example.org:99999/x", resolveTo("93.184.216.34")},
		{"https://inside.example.org/x", resolveTo("192.168.1.10")},
		{"https://meta.example.org/x", resolveTo("169.254.169.254")},
		{"https://mapped.example.org/x", resolveTo("::ffff:10.0.0.1")},
	} {
		_, err := Integration.Connection.Open(context.Background(), map[string]string{"url": c.url}, c.env)
		var te *telemetry.Error
		if !errors.As(err, &te) || te.Code != telemetry.EWEBHOOKHOST {
			t.Errorf("%s: %v, want webhook_host_not_allowed", c.url, err)
		}
	}
	s, err := Integration.Connection.Open(context.Background(), map[string]string{"url": "https://hooks.example.org:8443/n8n/secret-path"}, resolveTo("93.184.216.34"))
	if err != nil || !strings.HasPrefix(s.Shown["signing_secret"], SecretPrefix) || strings.Contains(s.Hint, "secret-path") {
		t.Fatalf("public URL: %+v %v", s, err)
	}
}

// TestSendRefusesInternalAddress: without a proxy the dialer refuses a
// loopback receiver at send time (a name may resolve inside after the
// connect-time check), permanently.
func TestSendRefusesInternalAddress(t *testing.T) {
	hit := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit = true }))
	defer srv.Close()
	client, err := notify.Outbound{}.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	to, _ := json.Marshal(stored{URL: srv.URL + "/hook", Secret: NewSecret()})
	// checkURL refuses the literal before dialing; a name is refused by
	// the dialer: post directly to see the dialer's refusal.
	n := &Notifier{Client: client}
	if _, err := n.Notify(context.Background(), alerting.Envelope{To: string(to), Messages: []alerting.Message{{Kind: alerting.KindTest, At: time.Now()}}}); err == nil || alerting.ErrorText(err) != "webhook_host_not_allowed" {
		t.Errorf("literal loopback: %v", err)
	}
	retry, err := n.post(context.Background(), stored{URL: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/hook", Secret: NewSecret()}, Event{ID: "x"})
	if err == nil || retry || alerting.ErrorText(err) != "internal_address_refused" || hit {
		t.Errorf("send to loopback by name: retry %v, %v (hit %v)", retry, err, hit)
	}
}

func TestSignKnownVector(t *testing.T) {
	// The Standard Webhooks specification's example.
	sig, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		[]byte(`{"test": 2432232314}`))
	if err != nil || sig != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Errorf("signature %s %v", sig, err)
	}
}
