package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
)

// The profiler is off by default, refused on anything but loopback, and
// served on its own listener when server.pprof_addr is set.
func TestPprofAddr(t *testing.T) {
	t.Parallel()
	if DefaultConfig().Server.PprofAddr != "" {
		t.Fatal("the profiler is on by default")
	}
	for addr, ok := range map[string]bool{"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true,
		"0.0.0.0:6060": false, ":6060": false, "10.0.0.1:6060": false, "127.0.0.1": false} {
		c := DefaultConfig()
		c.Server.PprofAddr = addr
		err := c.Validate()
		if refused := err != nil && strings.Contains(err.Error(), "server.pprof_addr"); refused == ok {
			t.Errorf("%q: %v", addr, err)
		}
	}
	c := DefaultConfig()
	c.Server.PprofAddr = "127.0.0.1:0"
	m := &Main{Config: c, Log: slog.New(slog.DiscardHandler)}
	if err := m.listenPprof(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	m.servePprof(gctx, g)
	res, err := http.Get("http://" + m.pprofListener.Addr().String() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || len(body) == 0 {
		t.Fatalf("/debug/pprof/cmdline: %d %q", res.StatusCode, body)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
