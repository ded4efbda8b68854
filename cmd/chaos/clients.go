package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

// The tenant the run sets up and the clients that load it, recording every
// answer and the batches acknowledged.

// call is a JSON request to an instance, retried while the service is
// unavailable (setting up and checking run through the faults' aftermath).
func (h *harness) call(method, path, token string, body any, want int) (map[string]any, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		base := h.instances[0].base()
		if time.Now().UnixNano()%2 == 1 {
			base = h.instances[1].base()
		}
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err == nil {
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			if res.StatusCode == want {
				return m, nil
			}
			if res.StatusCode != 503 {
				return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s %s: unavailable for 90 s (%v)", method, path, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// setUp makes the tenant, its ingest key and the rules.
func (h *harness) setUp() error {
	s, err := h.call("POST", "/v1/auth/signup", "", map[string]any{"email": fmt.Sprintf("chaos-%d@example.com", time.Now().UnixNano()),
		"password": "a long password", "name": "chaos"}, 201)
	if err != nil {
		return err
	}
	h.token = s["token"].(string)
	m, err := h.call("POST", "/v1/mcps", h.token, map[string]any{"name": "chaos server"}, 201)
	if err != nil {
		return err
	}
	h.mcp = m["id"].(string)
	k, err := h.call("POST", "/v1/mcps/"+h.mcp+"/keys", h.token, map[string]any{"name": "chaos"}, 201)
	if err != nil {
		return err
	}
	h.key = k["key"].(string)
	// errors fires in the Go client's error phases and resolves after;
	// calls fires once.
	for _, r := range []map[string]any{
		{"name": "errors", "metric": "errors", "comparator": ">", "threshold": 0, "window_minutes": 1, "channels": []string{"in_app"}, "notify_on_resolve": true},
		{"name": "calls", "metric": "calls", "comparator": ">", "threshold": 0, "window_minutes": 1, "channels": []string{"in_app"}},
	} {
		rule, err := h.call("POST", "/v1/mcps/"+h.mcp+"/rules", h.token, r, 201)
		if err != nil {
			return err
		}
		h.rules[rule["id"].(string)], _ = r["notify_on_resolve"].(bool)
	}
	logf("tenant ready: mcp %s, %d rules", h.mcp, len(h.rules))
	return nil
}

// record notes an answer a client got, and the ids of a batch answered 202.
func (h *harness) record(who string, status int, ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.statuses[status]++
	if status >= 500 && status != 503 {
		h.bad = append(h.bad, fmt.Sprintf("%s: %d", who, status))
	}
	if status == 202 {
		h.ackLocked(ids)
	}
}

func (h *harness) ackLocked(ids []string) {
	for _, id := range ids {
		h.acked[id] = true
	}
}

// balancer sends each request to the instances in turn and records what
// the Go client was answered.
type balancer struct {
	h    *harness
	turn int
	mu   sync.Mutex
}

func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	in := b.h.instances[b.turn%2]
	b.turn++
	b.mu.Unlock()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(in.base())
	r2 := req.Clone(req.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = u.Scheme, u.Host, u.Host
	r2.Body = io.NopCloser(bytes.NewReader(body))
	res, err := http.DefaultTransport.RoundTrip(r2)
	if err != nil {
		return nil, err
	}
	b.h.record("go client", res.StatusCode, batchIDs(body, req.Header.Get("Content-Encoding") == "gzip"))
	return res, nil
}

func batchIDs(body []byte, gz bool) []string {
	if gz {
		r, err := gzipReader(body)
		if err != nil {
			return nil
		}
		body = r
	}
	var b struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	_ = json.Unmarshal(body, &b)
	ids := make([]string, len(b.Items))
	for i, it := range b.Items {
		ids[i] = it.ID
	}
	return ids
}

// goClient sends items through the project's Go client, which retries.
// In every 90 s it sends errors from 15 s to 30 s: the errors rule (a
// 1-minute window) fires, resolves about a minute later, and fires again.
func (h *harness) goClient(ctx context.Context, seed int64) {
	c, err := client.New(client.Options{Endpoint: "http://balanced", Key: h.key,
		HTTPClient: &http.Client{Transport: &balancer{h: h}, Timeout: 10 * time.Second},
		BatchSize:  50, FlushInterval: 200 * time.Millisecond, QueueSize: 200_000, MaxRetries: 10_000,
		RetryBaseDelay: 100 * time.Millisecond, MaxRetryDelay: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fatalf("go client: %v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	start := time.Now()
	for n := 0; ctx.Err() == nil; n++ {
		phase := time.Since(start) % (90 * time.Second)
		errPhase := phase >= 15*time.Second && phase < 30*time.Second
		it := analytics.Item{ID: fmt.Sprintf("go-%d", n), Timestamp: time.Now(), SessionID: fmt.Sprintf("go-s%d", n%11),
			Method: analytics.MethodToolsCall, Name: fmt.Sprintf("go-tool-%d", rng.IntN(5)), Status: analytics.StatusOK,
			UserID: fmt.Sprintf("u%d", rng.IntN(9))}
		d := float64(rng.IntN(400))
		it.DurationMs = &d
		if errPhase && rng.IntN(3) == 0 {
			it.Status, it.ErrorType = analytics.StatusError, "Timeout"
		}
		_ = c.Add(it)
		time.Sleep(10 * time.Millisecond)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Close(cctx); err != nil {
		logf("go client: close: %v", err)
	}
	st := c.Stats()
	logf("go client: accepted %d, dropped %d, failed %d", st.Accepted, st.Dropped, st.Failed)
}

// giveUpClient posts batches with a deadline of a few milliseconds and
// never retries: its items may or may not be stored, never twice.
func (h *harness) giveUpClient(ctx context.Context, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	for n := 0; ctx.Err() == nil; n++ {
		items := make([]map[string]any, 20)
		ids := make([]string, len(items))
		for i := range items {
			ids[i] = fmt.Sprintf("gu-%d-%d", n, i)
			items[i] = map[string]any{"id": ids[i], "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "session_id": "gu",
				"method": "tools/call", "name": "gu-tool", "status": "ok"}
		}
		body, _ := json.Marshal(map[string]any{"items": items})
		req, _ := http.NewRequest("POST", h.instances[n%2].base()+"/v1/ingest", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+h.key)
		res, err := (&http.Client{Timeout: time.Duration(1+rng.IntN(30)) * time.Millisecond}).Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			h.record("give-up client", res.StatusCode, ids)
		}
		time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond)
	}
}

// sdkClient runs the TypeScript SDK driver (sdk.mjs) for the run's length.
func (h *harness) sdkClient(total time.Duration) error {
	script := filepath.Join(h.repo, "cmd", "chaos", "sdk.mjs")
	cmd := exec.Command("node", script, h.instances[0].base()+","+h.instances[1].base(), h.key, strconv.Itoa(int(total.Seconds())))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var last string
	for sc.Scan() {
		var line struct {
			Status int      `json:"status"`
			Acked  []string `json:"acked"`
			Done   int      `json:"done"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch {
		case line.Status != 0:
			h.record("typescript sdk", line.Status, nil)
		case line.Acked != nil:
			h.mu.Lock()
			h.ackLocked(line.Acked) // its status was counted on the line before
			h.mu.Unlock()
		case line.Done != 0:
			last = sc.Text()
		}
	}
	if err := cmd.Wait(); err != nil {
		return err
	}
	logf("typescript sdk: %s", last)
	return nil
}

func gzipReader(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}
