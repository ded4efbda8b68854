package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeMix is what the benchmark's probes check, per 100 probes, each kind
// a server on a port of its own (in this order from -port): go-sdk
// servers without sessions (they answer server/discover, protocol
// 2026-07-28), with sessions (initialize, then the session's DELETE),
// slow ones (each request answered after 100 to 900 ms), servers
// answering 500, servers that never answer (the check times out after the
// default 10 s) and a port where nothing listens.
var probeMix = []struct {
	kind   string
	per100 int
}{{"stateless", 70}, {"sessions", 15}, {"slow", 8}, {"failing", 3}, {"hanging", 2}, {"refused", 2}}

// probeKind is the kind of server probe i checks.
func probeKind(i int) string {
	r := i % 100
	for _, m := range probeMix {
		if r < m.per100 {
			return m.kind
		}
		r -= m.per100
	}
	return probeMix[0].kind
}

func probeMixText() string {
	var parts []string
	for _, m := range probeMix {
		parts = append(parts, fmt.Sprintf("%d%% %s", m.per100, m.kind))
	}
	return strings.Join(parts, ", ")
}

// probeTargets are the benchmark's MCP servers, in this process (so that
// their CPU is this process's, apart from the service's).
type probeTargets struct {
	urls    map[string]string // by kind
	servers []*http.Server
	counts  map[string]*atomic.Int64
}

func startProbeTargets(host string, port int) (*probeTargets, error) {
	t := &probeTargets{urls: map[string]string{}, counts: map[string]*atomic.Int64{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-target", Version: "1.0.0"}, nil)
	type args struct {
		Query string `json:"query"`
		Limit int    `json:"limit,omitempty"`
	}
	for _, name := range []string{"search", "fetch", "summarize", "list_files", "read_file"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "The " + name + " tool of the bench target."},
			func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	}
	get := func(*http.Request) *mcp.Server { return srv }
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	handlers := map[string]http.Handler{
		"stateless": stateless,
		"sessions":  mcp.NewStreamableHTTPHandler(get, nil),
		"slow": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(time.Duration(100+rand.IntN(800)) * time.Millisecond):
				stateless.ServeHTTP(w, r)
			case <-r.Context().Done():
			}
		}),
		"failing": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "internal error", http.StatusInternalServerError)
		}),
		"hanging": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }),
	}
	for i, m := range probeMix {
		addr := net.JoinHostPort(host, strconv.Itoa(port+i))
		t.urls[m.kind] = "http://" + addr + "/mcp"
		h := handlers[m.kind]
		if h == nil { // refused: nothing may listen there
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.close()
				return nil, fmt.Errorf("probes: %s should be closed (the refused target) but something listens there", addr)
			}
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("probes: test server: %w", err)
		}
		n := &atomic.Int64{}
		t.counts[m.kind] = n
		s := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			h.ServeHTTP(w, r)
		})}
		t.servers = append(t.servers, s)
		go s.Serve(ln)
	}
	return t, nil
}

func (t *probeTargets) requests() map[string]int64 {
	out := map[string]int64{}
	for k, n := range t.counts {
		out[k] = n.Load()
	}
	return out
}

func (t *probeTargets) close() {
	for _, s := range t.servers {
		s.Close()
	}
}

// cpuMeters reads the CPU time of the processes a run involves.
type cpuMeters struct {
	service              int
	chPIDFile, pgPIDFile string
}

// cpuSample is CPU seconds used by each.
type cpuSample struct{ service, clickhouse, postgres, self float64 }

func (m cpuMeters) read() cpuSample {
	var s cpuSample
	s.service, _ = procCPUSeconds(m.service)
	s.self, _ = procCPUSeconds(os.Getpid())
	if pid, err := readPID(m.chPIDFile); err == nil {
		s.clickhouse, _ = procCPUSeconds(pid)
	}
	if pid, err := readPID(m.pgPIDFile); err == nil {
		s.postgres, _ = procTreeCPUSeconds(pid)
	}
	return s
}

func (s cpuSample) minus(o cpuSample) cpuSample {
	return cpuSample{s.service - o.service, s.clickhouse - o.clickhouse, s.postgres - o.postgres, s.self - o.self}
}

func (s cpuSample) scale(f float64) cpuSample {
	return cpuSample{s.service * f, s.clickhouse * f, s.postgres * f, s.self * f}
}

// procTreeCPUSeconds is the CPU time of a process, of its children that
// ended (PostgreSQL's postmaster reaps its backends) and of its live
// children (the backends): PostgreSQL's whole CPU time.
func procTreeCPUSeconds(pid int) (float64, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, err
	}
	total := statCPU(fields, true)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		child, err := strconv.Atoi(filepath.Base(d))
		if err != nil || child == pid {
			continue
		}
		f, err := procStatFields(child)
		if err != nil || len(f) < 2 || f[1] != strconv.Itoa(pid) { // field 4, the parent
			continue
		}
		total += statCPU(f, true)
	}
	return total, nil
}

// statCPU is utime + stime (and cutime + cstime, the waited-for
// children's, with children) of /proc/<pid>/stat's fields after the
// command name, in seconds.
func statCPU(fields []string, children bool) float64 {
	last := 12
	if children {
		last = 14
	}
	total := 0.0
	for i := 11; i <= last && i < len(fields); i++ {
		v, _ := strconv.ParseFloat(fields[i], 64)
		total += v
	}
	return total / clockTicks
}
