package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
	"github.com/mcpscope/telemetry/postgres"
)

// goTarget is a go-sdk MCP server on a loopback port that can be
// stopped and started again on the same port.
type goTarget struct {
	t       *testing.T
	addr    string
	handler http.Handler
	tlsCfg  *tls.Config
	srv     *http.Server
}

func newGoTarget(t *testing.T, stateless bool, tlsCfg *tls.Config) *goTarget {
	srv := mcp.NewServer(&mcp.Implementation{Name: "probe-target-go", Version: "3.0.0"}, nil)
	type args struct {
		Q string `json:"q"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "search the docs"}, func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	g := &goTarget{t: t, tlsCfg: tlsCfg,
		handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})}
	g.start("127.0.0.1:0")
	t.Cleanup(g.stop)
	return g
}

func (g *goTarget) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		g.t.Fatal(err)
	}
	g.addr = ln.Addr().String()
	if g.tlsCfg != nil {
		ln = tls.NewListener(ln, g.tlsCfg)
	}
	g.srv = &http.Server{Handler: g.handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
}

func (g *goTarget) stop() { _ = g.srv.Close() }

func (g *goTarget) url() string {
	if g.tlsCfg != nil {
		return "https://" + g.addr + "/mcp"
	}
	return "http://" + g.addr + "/mcp"
}

// expiringCert is a test CA (PEM) and a server certificate for 127.0.0.1
// it issued that expires in 3 days.
func expiringCert(t *testing.T) ([]byte, *tls.Config) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "probe test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(30 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(3 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der, caDER}, PrivateKey: key}}}
}

// nodeTarget runs sdk/typescript/test/fixtures/probe-target.js (mode v1
// or v2) and returns its URL and the sessions it saw closed.
func nodeTarget(t *testing.T, mode string) (string, *atomic.Int64) {
	node := lookNode(t)
	root := testenv.RepoRoot()
	pkg := filepath.Join(root, "sdk/typescript")
	npmInstall(t, root, pkg)
	cmd := exec.Command(node, "test/fixtures/probe-target.js", mode)
	cmd.Dir = pkg
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("node %s: no URL", mode)
	}
	url := lines.Text()
	var closed atomic.Int64
	go func() {
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "closed ") {
				closed.Add(1)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return url, &closed
}

// probeConfig is testConfig with probes allowed on loopback (tests only),
// checks every second (probes.test_interval, test-only) and rules
// evaluated every second.
func probeConfig(t *testing.T) Config {
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Probes.AllowPrivate = true
	cfg.Probes.TestInterval = time.Second
	cfg.Alerting.EvaluateInterval = time.Second
	return cfg
}

func (a api) probe(token, id string) map[string]any {
	a.t.Helper()
	return a.must(200, "GET", "/v1/probes/"+id, token, nil)
}

// waitProbe polls the probe until ok says so.
func (a api) waitProbe(token, id string, timeout time.Duration, ok func(p map[string]any) bool) map[string]any {
	a.t.Helper()
	var p map[string]any
	eventually(a.t, timeout, func() error {
		p = a.probe(token, id)
		if !ok(p) {
			return fmt.Errorf("probe %s: %v", id, p)
		}
		return nil
	})
	return p
}

// Real servers on loopback: the TypeScript SDK v2 (stateless, 2026-07-28),
// v1 with sessions, go-sdk; one killed goes down within two intervals, a
// probe_down rule fires and the inbox says why; restarted, it is up and the
// rule resolves. A hanging server times out; a certificate expiring in 3
// days is a warning. The badge shows the status; a calls < rule says the
// server answers.
func TestProbesEndToEnd(t *testing.T) {
	t.Parallel()
	caPEM, tlsCfg := expiringCert(t)
	cfg := probeConfig(t)
	cfg.Alerting.Outbound.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(cfg.Alerting.Outbound.CAFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	m, base := startMain(t, cfg)
	a := api{t, base}
	token, mcpID, _ := a.newTenant("prober")

	v2URL, _ := nodeTarget(t, "v2")
	v1URL, v1Closed := nodeTarget(t, "v1")
	goSrv := newGoTarget(t, true, nil)
	tlsSrv := newGoTarget(t, true, tlsCfg)
	hang := make(chan struct{})
	hangSrv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }), ReadHeaderTimeout: time.Second}
	hln, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = hangSrv.Serve(hln) }()
	t.Cleanup(func() { close(hang); _ = hangSrv.Close() })

	create := func(url string, timeoutMs int) string {
		return a.must(201, "POST", "/v1/mcps/"+mcpID+"/probes", token, map[string]any{"url": url, "timeout_ms": timeoutMs,
			"headers": map[string]string{"Authorization": "Bearer probe-secret-12345678"}})["id"].(string)
	}
	ids := map[string]string{"v2": create(v2URL, 10000), "v1": create(v1URL, 10000), "go": create(goSrv.url(), 10000),
		"tls": create(tlsSrv.url(), 10000), "hang": create("http://"+hln.Addr().String()+"/mcp", 1000)}
	want := map[string]string{"v2": "2026-07-28", "v1": "2025-11-25", "go": "2026-07-28", "tls": "2026-07-28"}
	for name, proto := range want {
		p := a.waitProbe(token, ids[name], 20*time.Second, func(p map[string]any) bool { return p["status"] == "up" })
		if p["protocol_version"] != proto || p["latency_ms"] == nil || p["last_error"] != nil {
			t.Fatalf("%s: %v, want up with protocol %s", name, p, proto)
		}
		if h := p["headers"].(map[string]any)["Authorization"]; h != "••••••••5678" {
			t.Fatalf("%s: header hint %v", name, h)
		}
	}
	if v1Closed.Load() == 0 {
		t.Fatal("the v1 server saw no session closed by DELETE")
	}
	p := a.probe(token, ids["tls"])
	if w, _ := p["warning"].(string); !strings.Contains(w, "expires in 2 days") && !strings.Contains(w, "expires in 3 days") || p["tls_expires_at"] == nil {
		t.Fatalf("tls probe: %v, want a certificate warning", p)
	}
	hp := a.waitProbe(token, ids["hang"], 15*time.Second, func(p map[string]any) bool { return p["status"] == "down" })
	if e, _ := hp["last_error"].(string); !strings.HasPrefix(e, "timeout:") {
		t.Fatalf("hanging server: %v", hp)
	}
	a.must(204, "DELETE", "/v1/probes/"+ids["hang"], token, nil)

	// The probe's tools reached the inventory.
	inv := a.must(200, "GET", "/v1/mcps/"+mcpID+"/inventory", token, nil)
	if tools := inv["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["name"] != "search" || tools[0].(map[string]any)["source"] != "probe" {
		t.Fatalf("inventory %v", inv)
	}
	if ch := inv["changes"].([]any); len(ch) == 0 || ch[len(ch)-1].(map[string]any)["source"] != "probe" {
		t.Fatalf("inventory changes %v", ch)
	}

	// Results are listed, newest first.
	eventually(t, 10*time.Second, func() error {
		res := a.must(200, "GET", "/v1/probes/"+ids["go"]+"/results?limit=2", token, nil)
		items := res["items"].([]any)
		if len(items) != 2 || res["next_cursor"] == nil || items[0].(map[string]any)["status"] != "up" ||
			items[0].(map[string]any)["schema_hash"] == nil {
			return fmt.Errorf("results %v", res)
		}
		return nil
	})

	// The badge: no credential, status and uptime only; revocable.
	badge := a.must(201, "POST", "/v1/probes/"+ids["go"]+"/badge", token, nil)["url"].(string)
	badgePath := badge[strings.Index(badge, "/badges/"):]
	eventually(t, 10*time.Second, func() error {
		res, err := http.Get(base + badgePath)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(body), "up · 100.00%") {
			return fmt.Errorf("badge %d %s", res.StatusCode, body)
		}
		if strings.Contains(string(body), mcpID) || strings.Contains(string(body), "127.0.0.1") {
			return fmt.Errorf("badge leaks: %s", body)
		}
		return nil
	})

	// A calls < 1 rule on the quiet MCP says the server answers.
	quiet := a.must(201, "POST", "/v1/mcps/"+mcpID+"/rules", token, map[string]any{"name": "no calls", "metric": "calls",
		"comparator": "<", "threshold": 1, "window_minutes": 5, "channels": []string{"in_app"}})
	rule := a.must(201, "POST", "/v1/mcps/"+mcpID+"/rules", token, map[string]any{"name": "server down", "metric": "probe_down",
		"comparator": ">=", "threshold": 2, "window_minutes": 1, "channels": []string{"in_app"}, "renotify_minutes": 5})
	inboxSays := func(ruleID, text string) error {
		for _, it := range a.must(200, "GET", "/v1/account/inbox", token, nil)["items"].([]any) {
			m := it.(map[string]any)
			if m["rule_id"] == ruleID && strings.Contains(m["body"].(string), text) {
				return nil
			}
		}
		return fmt.Errorf("no inbox item of rule %s saying %q", ruleID, text)
	}
	eventually(t, 15*time.Second, func() error {
		return inboxSays(quiet["id"].(string), "quiet: the server answers, nobody is calling")
	})

	// Killed: down within two intervals (1 s each here, plus a check's
	// own time), the rule fires, the inbox says why.
	goSrv.stop()
	killed := time.Now()
	a.waitProbe(token, ids["go"], 10*time.Second, func(p map[string]any) bool { return p["status"] == "down" })
	if d := time.Since(killed); d > 3*time.Second {
		t.Errorf("down after %v, want within two intervals", d)
	}
	eventually(t, 15*time.Second, func() error { return inboxSays(rule["id"].(string), "connection refused") })
	if r := a.must(200, "GET", "/v1/rules/"+rule["id"].(string), token, nil); r["state"] != "firing" {
		t.Fatalf("rule %v", r)
	}
	// A re-notification carries the probe note as the first notice did.
	if _, err := m.PG.Pool.Exec(context.Background(), `UPDATE rules SET last_fired_at = now() - interval '6 minutes' WHERE id = $1`, rule["id"]); err != nil {
		t.Fatal(err)
	}
	if n, err := postgres.NewEvaluationStore(m.PG).Renotify(context.Background(), time.Now()); err != nil || n != 1 {
		t.Fatalf("renotify: %d %v", n, err)
	}
	eventually(t, 5*time.Second, func() error {
		for _, it := range a.must(200, "GET", "/v1/account/inbox", token, nil)["items"].([]any) {
			m := it.(map[string]any)
			if m["rule_id"] == rule["id"] && strings.HasPrefix(fmt.Sprint(m["title"]), "Still firing") {
				if !strings.Contains(m["body"].(string), "Probe: down since") || !strings.Contains(m["body"].(string), "connection refused") {
					return fmt.Errorf("re-notification without the probe note: %v", m["body"])
				}
				return nil
			}
		}
		return errors.New("no re-notification in the inbox")
	})
	// Restarted on the same port: up again, the rule resolves.
	goSrv.start(goSrv.addr)
	a.waitProbe(token, ids["go"], 10*time.Second, func(p map[string]any) bool { return p["status"] == "up" })
	eventually(t, 15*time.Second, func() error {
		if r := a.must(200, "GET", "/v1/rules/"+rule["id"].(string), token, nil); r["state"] != "ok" {
			return fmt.Errorf("rule %v", r)
		}
		return nil
	})
	// /mcp's list_probes tells the same.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "probe-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: bearerRT{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_probes", Arguments: map[string]any{"mcp_id": mcpID}})
	_ = cs.Close()
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, ids["go"]+" "+goSrv.url()+": up") {
		t.Fatalf("list_probes: %v %+v", err, res)
	}
	a.must(204, "DELETE", "/v1/probes/"+ids["go"]+"/badge", token, nil)
	if res, err := http.Get(base + badgePath); err != nil || res.StatusCode != 404 {
		t.Fatalf("revoked badge: %v %v", res, err)
	}
}

// With probes.allow_private off (the default), loopback, private,
// link-local and metadata addresses are refused at create, a host name
// resolving to 127.0.0.1 included; the cap per account holds; intervals
// under 30 s are refused.
func TestProbesGuardAndLimits(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Probes.MaxPerAccount = 2
	_, base := startMain(t, cfg)
	a := api{t, base}
	token, mcpID, _ := a.newTenant("guard")
	for _, u := range []string{"http://127.0.0.1:45999/mcp", "http://localhost:45999/mcp", "http://10.0.0.8/mcp",
		"http://169.254.169.254/latest/meta-data", "http://[::1]/mcp", "http://[fe80::1]/mcp", "http://192.168.1.1/mcp"} {
		_, body := a.do("POST", "/v1/mcps/"+mcpID+"/probes", token, map[string]any{"url": u})
		if body["code"] != "invalid" {
			t.Errorf("%s: %v, want 422 invalid", u, body)
		}
	}
	for _, bad := range []map[string]any{{"url": "ftp://example.com/"}, {"url": "https://93.184.215.14/mcp", "interval_seconds": 29},
		{"url": "https://93.184.215.14/mcp", "headers": map[string]string{"Mcp-Session-Id": "x"}}} {
		if status, body := a.do("POST", "/v1/mcps/"+mcpID+"/probes", token, bad); status != 422 {
			t.Errorf("%v: %d %v", bad, status, body)
		}
	}
	for range 2 {
		a.must(201, "POST", "/v1/mcps/"+mcpID+"/probes", token, map[string]any{"url": "https://93.184.215.14/mcp", "enabled": false})
	}
	if _, body := a.do("POST", "/v1/mcps/"+mcpID+"/probes", token, map[string]any{"url": "https://93.184.215.14/mcp"}); body["code"] != "limit_reached" {
		t.Fatalf("third probe: %v", body)
	}
	other, _, _ := a.newTenant("other")
	list := a.must(200, "GET", "/v1/mcps/"+mcpID+"/probes", token, nil)["items"].([]any)
	if status, _ := a.do("GET", "/v1/probes/"+list[0].(map[string]any)["id"].(string), other, nil); status != 404 {
		t.Fatalf("another account's probe: %d", status)
	}
}

// Two instances share the schedule: each due probe runs once per
// interval (never twice at once); one instance stopped, the other runs
// every probe.
func TestProbesTwoInstances(t *testing.T) {
	t.Parallel()
	target := newGoTarget(t, true, nil)
	cfgA := probeConfig(t)
	cfgA.Ingest.NodeID = "probe-a"
	cfgB := cfgA
	cfgB.Ingest.NodeID, cfgB.Ingest.WALDir = "probe-b", t.TempDir()
	var mu sync.Mutex
	runs := map[string][]time.Time{}
	byNode := map[string]int{}
	ours := "" // this test's MCP: the database may hold other tests' probes
	hook := func(node string) func(d postgres.DueProbe, c alerting.ProbeCheck) {
		return func(d postgres.DueProbe, c alerting.ProbeCheck) {
			mu.Lock()
			defer mu.Unlock()
			if d.MCPID != ours {
				return
			}
			runs[d.ID] = append(runs[d.ID], c.At)
			byNode[node]++
		}
	}
	mA, baseA, stopA := startStoppable(t, cfgA)
	mA.Prober.OnCheck = hook("a")
	mB, _, _ := startStoppable(t, cfgB)
	mB.Prober.OnCheck = hook("b")
	a := api{t, baseA}
	token, mcpID, _ := a.newTenant("two")
	mu.Lock()
	ours = mcpID
	mu.Unlock()
	for range 4 {
		a.must(201, "POST", "/v1/mcps/"+mcpID+"/probes", token, map[string]any{"url": target.url()})
	}
	time.Sleep(8 * time.Second)
	mu.Lock()
	for id, ts := range runs {
		if len(ts) < 3 || len(ts) > 9 {
			t.Errorf("probe %s ran %d times in 8 s at a 1 s interval", id, len(ts))
		}
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < 500*time.Millisecond {
				t.Errorf("probe %s ran twice %v apart", id, gap)
			}
		}
	}
	t.Logf("checks per instance %v", byNode)
	if len(runs) != 4 || byNode["a"] == 0 || byNode["b"] == 0 {
		t.Fatalf("runs %d probes, per instance %v", len(runs), byNode)
	}
	before := byNode["b"]
	mu.Unlock()
	stopA()
	time.Sleep(4 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	if n := byNode["b"] - before; n < 4*2 {
		t.Fatalf("instance b ran %d checks in 4 s after a stopped, want every probe about every second", n)
	}
}
