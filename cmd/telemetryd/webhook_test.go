package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

const receiverHost = "hooks.example.org"

// receiver is e2e/webhooks/receiver.js: an HTTPS server verifying each
// request with the standardwebhooks npm package against the secret in
// its secret file.
type receiver struct {
	addr       string
	secretFile string
	client     *http.Client
}

type receivedEvent struct {
	Path     string         `json:"path"`
	ID       string         `json:"id"`
	Verified bool           `json:"verified"`
	Error    string         `json:"error"`
	Payload  map[string]any `json:"payload"`
}

func startReceiver(t *testing.T, e *deliveryEnv) *receiver {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "e2e", "webhooks")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil || serr != nil {
		if testenv.InCI() {
			t.Fatal("node and e2e/webhooks/node_modules are needed (scripts/test.sh installs them)")
		}
		t.Skip("node or e2e/webhooks/node_modules missing: npm ci in e2e/webhooks")
	}
	tmp := t.TempDir()
	cert, key, err := e.proxy.CA.WriteLeaf(tmp, receiverHost)
	if err != nil {
		t.Fatal(err)
	}
	port := testenv.FreePort(t)
	r := &receiver{addr: "127.0.0.1:" + strconv.Itoa(port), secretFile: filepath.Join(tmp, "secret")}
	r.setSecret(t, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	cmd := exec.Command(node, "receiver.js", "--port", strconv.Itoa(port), "--cert", cert, "--key", key, "--secret-file", r.secretFile)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.proxy.CA.PEM)
	r.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: receiverHost, MinVersion: tls.VersionTLS12}}}
	eventually(t, 15*time.Second, func() error { _, err := r.events(); return err })
	e.proxy.TunnelTo(receiverHost, r.addr)
	return r
}

func (r *receiver) setSecret(t *testing.T, s string) {
	t.Helper()
	if err := os.WriteFile(r.secretFile, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (r *receiver) events() ([]receivedEvent, error) {
	res, err := r.client.Get("https://" + r.addr + "/results")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out []receivedEvent
	return out, json.NewDecoder(res.Body).Decode(&out)
}

func (r *receiver) waitEvents(t *testing.T, n int) []receivedEvent {
	t.Helper()
	var evs []receivedEvent
	eventually(t, 10*time.Second, func() error {
		var err error
		if evs, err = r.events(); err == nil && len(evs) != n {
			err = fmt.Errorf("%d events, want %d", len(evs), n)
		}
		return err
	})
	return evs
}

// TestSignedWebhook: a webhook connected with any HTTPS URL answers its
// signing secret once; a critical rule's firing and resolve arrive as
// rule.fired and rule.resolved events that the standardwebhooks reference
// implementation verifies; after a rotation the new secret verifies and,
// for a day, the old one too; a wrong secret does not; internal addresses
// are refused at connect time.
func TestSignedWebhook(t *testing.T) {
	t.Parallel()
	e := newDeliveryEnv(t, false)
	r := startReceiver(t, e)
	for _, u := range []string{"https://127.0.0.1/hook", "https://169.254.169.254/latest/meta-data", "https://localhost/x",
		"https://[::1]/x", "http://" + receiverHost + "/hook"} {
		e.a.must(422, "PUT", "/v1/account/channels/webhook/connection", e.token, map[string]any{"url": u})
	}
	e.a.must(422, "PUT", "/v1/account/channels/webhook/webhook", e.token, map[string]any{"url": "https://" + receiverHost + "/hook"})
	c := e.a.must(200, "PUT", "/v1/account/channels/webhook/connection", e.token, map[string]any{"url": "https://" + receiverHost + "/hook/s3cr3t-path"})
	secret, _ := c["signing_secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || strings.Contains(c["hint"].(string), "s3cr3t") {
		t.Fatalf("connect answer %v", c)
	}
	if ch := e.channel(t, "webhook"); strings.Contains(fmt.Sprint(ch), secret) || strings.Contains(fmt.Sprint(ch), "s3cr3t") || ch["connected"] != true {
		t.Fatalf("channel shows a secret: %v", ch)
	}
	r.setSecret(t, secret)

	name := `Search "down" <users/all> & co`
	rule := e.fireWith(t, map[string]any{"name": name, "channels": []string{"webhook"}, "severity": "critical"})
	e.waitStatus(t, rule, "webhook", "sent", 10*time.Second)
	e.resolve(t, rule) // no notify_on_resolve: the webhook hears no resolve
	fired := r.waitEvents(t, 1)[0]
	if !fired.Verified || fired.Path != "/hook/s3cr3t-path" {
		t.Fatalf("fired event: %+v", fired)
	}
	p := fired.Payload
	data, _ := p["data"].(map[string]any)
	if p["type"] != "rule.fired" || p["version"] != 1.0 || p["id"] != fired.ID || data["severity"] != "critical" || data["state"] != "firing" ||
		data["value"] != 0.0 || data["threshold"] != 1.0 || data["metric"] != "calls" ||
		data["rule"].(map[string]any)["name"] != name || data["mcp"].(map[string]any)["id"] != e.mcp ||
		!strings.HasSuffix(data["links"].(map[string]any)["rule"].(string), "/alerts/"+rule) {
		t.Errorf("rule.fired event: %v", p)
	}
	if _, err := time.Parse(time.RFC3339, p["timestamp"].(string)); err != nil {
		t.Errorf("timestamp %v", p["timestamp"])
	}
	resolving := e.fireWith(t, map[string]any{"name": "resolves", "channels": []string{"webhook"}, "notify_on_resolve": true})
	e.waitStatus(t, resolving, "webhook", "sent", 10*time.Second)
	e.resolve(t, resolving)
	evs := r.waitEvents(t, 3)
	if evs[2].Payload["type"] != "rule.resolved" || !evs[2].Verified || evs[2].Payload["data"].(map[string]any)["state"] != "ok" {
		t.Errorf("rule.resolved event: %+v", evs[2])
	}

	// Rotation: the new secret verifies; the old one does for a day.
	rot := e.a.must(200, "POST", "/v1/account/channels/webhook/connection/rotate", e.token, nil)
	next, _ := rot["signing_secret"].(string)
	if !strings.HasPrefix(next, "whsec_") || next == secret {
		t.Fatalf("rotate answer %v", rot)
	}
	r.setSecret(t, next)
	if res := e.a.must(200, "POST", "/v1/account/channels/webhook/test", e.token, nil); res["status"] != "sent" {
		t.Fatalf("test with the new secret: %v", res)
	}
	r.setSecret(t, secret)
	if res := e.a.must(200, "POST", "/v1/account/channels/webhook/test", e.token, nil); res["status"] != "sent" {
		t.Fatalf("test with the previous secret in its grace day: %v", res)
	}
	r.setSecret(t, "whsec_"+strings.Repeat("B", 32))
	if res := e.a.must(200, "POST", "/v1/account/channels/webhook/test", e.token, nil); res["status"] != "failed" || res["error"] != "http_401" {
		t.Fatalf("test with a wrong secret: %v", res)
	}
	evs = r.waitEvents(t, 6)
	if !evs[3].Verified || !evs[4].Verified || evs[5].Verified || evs[3].Payload["type"] != "test" {
		t.Errorf("rotation events: %+v", evs[3:])
	}
	// Reconnecting makes a new secret (and forgets the old ones).
	again := e.a.must(200, "PUT", "/v1/account/channels/webhook/connection", e.token, map[string]any{"url": "https://" + receiverHost + "/hook/s3cr3t-path"})
	if again["signing_secret"] == next || again["signing_secret"] == secret {
		t.Error("reconnect kept the secret")
	}
	_, body := e.a.do("GET", "/v1/account/notifications?limit=200", e.token, nil)
	if raw, _ := json.Marshal(body); strings.Contains(string(raw), "whsec_") || strings.Contains(string(raw), "s3cr3t") {
		t.Error("the delivery log shows a secret")
	}
}
