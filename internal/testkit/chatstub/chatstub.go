// Package chatstub is a test stand-in for the chat providers: a test
// certificate authority and an HTTP CONNECT proxy that intercepts TLS and
// answers as hooks.slack.com, discord.com, events.pagerduty.com, the Teams
// Workflows hosts and chat.googleapis.com (tests and bench only). The
// service reaches it exactly as it reaches the real providers through an
// egress proxy: alerting.outbound.proxy_url names the proxy and
// alerting.outbound.ca_file the CA (docs/delivery.md).
package chatstub

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CA is a throwaway certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
	mu   sync.Mutex
	leaf map[string]*tls.Certificate
}

// NewCA makes a CA valid for a day.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "telemetryd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaf: map[string]*tls.Certificate{}}, nil
}

// WriteFile writes the CA certificate (PEM) into dir and returns its path.
func (ca *CA) WriteFile(dir string) (string, error) {
	p := filepath.Join(dir, "test-ca.pem")
	return p, os.WriteFile(p, ca.PEM, 0o600)
}

// Leaf returns a server certificate for host (a name or an IP), issued by
// the CA and cached.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaf[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	ca.leaf[host] = c
	return c, nil
}

// WriteLeaf writes a certificate and key for host (PEM) into dir, for a
// server started outside Go (the SMTP server of the tests).
func (ca *CA) WriteLeaf(dir, host string) (certPath, keyPath string, err error) {
	c, err := ca.Leaf(host)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return "", "", err
	}
	var certPEM []byte
	for _, der := range c.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	certPath, keyPath = filepath.Join(dir, host+".crt"), filepath.Join(dir, host+".key")
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

// Proxy is an HTTP CONNECT proxy that terminates TLS itself (with a
// certificate of the CA for the requested host) and hands each request to
// Handler, as if it were the host. Requests other than CONNECT to port
// 443 get 405.
type Proxy struct {
	CA      *CA
	Handler http.Handler
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]bool
	closed  bool
	tunnels map[string]string
}

// TunnelTo makes CONNECTs to host a plain tunnel to addr (a local server
// with its own certificate for host, e.g. a receiver written in another
// language) instead of an interception.
func (p *Proxy) TunnelTo(host, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tunnels == nil {
		p.tunnels = map[string]string{}
	}
	p.tunnels[host] = addr
}

func (p *Proxy) tunnel(host string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tunnels[host]
}

// Start listens on a loopback port.
func (p *Proxy) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.ln, p.conns = ln, map[net.Conn]bool{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.track(c, true) {
				c.Close()
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer p.track(c, false)
				p.serve(c)
			}()
		}
	}()
	return nil
}

func (p *Proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			return false
		}
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

// URL is the proxy's address for alerting.outbound.proxy_url.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy and drops its connections (a hanging handler
// sees its request's context end).
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	host, port, err := net.SplitHostPort(req.Host)
	if req.Method != http.MethodConnect || err != nil || port != "443" {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if addr := p.tunnel(host); addr != "" {
		up, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(up, br); up.(*net.TCPConn).CloseWrite() }()
		_, _ = io.Copy(c, up)
		return
	}
	leaf, err := p.CA.Leaf(host)
	if err != nil {
		return
	}
	tc := tls.Server(&bufferedConn{Conn: c, r: br}, &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		return
	}
	srv := &http.Server{Handler: p.Handler, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(&oneConnListener{c: tc, done: make(chan struct{})})
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// oneConnListener serves one connection, then blocks until it closes.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = &closeNotifyConn{Conn: l.c, done: l.done} })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

type closeNotifyConn struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (c *closeNotifyConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// Start makes a CA, starts a proxy that answers with h, and writes the CA
// certificate into dir; the file is what alerting.outbound.ca_file names.
func Start(h http.Handler, dir string) (p *Proxy, caFile string, err error) {
	ca, err := NewCA()
	if err != nil {
		return nil, "", err
	}
	p = &Proxy{CA: ca, Handler: h}
	if err := p.Start(); err != nil {
		return nil, "", err
	}
	caFile, err = ca.WriteFile(dir)
	if err != nil {
		p.Close()
		return nil, "", err
	}
	return p, caFile, nil
}
