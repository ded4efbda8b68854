package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"golang.org/x/sync/errgroup"
)

// loopbackAddr reports whether addr is host:port with a loopback IP host
// (or localhost): the profiler is never reachable from another machine.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listenPprof opens the profiler's listener when server.pprof_addr is set
// (docs/configuration.md): off by default, loopback only.
func (m *Main) listenPprof() error {
	addr := m.Config.Server.PprofAddr
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server.pprof_addr: %w", err)
	}
	m.pprofListener = ln
	m.closers = append(m.closers, func() { _ = ln.Close() })
	return nil
}

// servePprof serves /debug/pprof/ on the profiler's listener, if any,
// until ctx ends.
func (m *Main) servePprof(ctx context.Context, g *errgroup.Group) {
	if m.pprofListener == nil {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ps := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	g.Go(func() error {
		m.Log.Info("serving the Go profiler", "addr", "http://"+m.pprofListener.Addr().String()+"/debug/pprof/")
		if err := ps.Serve(m.pprofListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error { <-ctx.Done(); return ps.Close() })
}
