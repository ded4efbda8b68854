// Command chaos is the randomized fault harness (docs/chaos.md): two
// telemetryd instances on one ClickHouse and one PostgreSQL of its own,
// retrying clients (the Go client package, the TypeScript SDK, a client
// that gives up mid-request) and alert rules, under a seeded random
// schedule of faults: SIGKILL of an instance, ClickHouse or PostgreSQL
// killed and restarted, the first instance's log disk filled. Afterwards
// it checks that every acknowledged item is stored exactly once in events
// and in every rollup (against the views re-run over events in a database
// of their own), that every rule transition made exactly one delivery per
// person and channel, and that no answer was a 5xx other than 503. It
// prints the seed, the schedule and a verdict; the same seed replays the
// same schedule. scripts/chaos.sh builds and runs it (`make chaos`).
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/client"
)

func main() {
	os.Exit(run())
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	n, err := strconv.Atoi(env(k, strconv.Itoa(def)))
	if err != nil {
		fatalf("%s: %v", k, err)
	}
	return n
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos: "+format+"\n", args...)
	os.Exit(2)
}

func logf(format string, args ...any) {
	fmt.Printf("[chaos %s] "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.0")}, args...)...)
}

// harness is one run: its servers, instances, clients and what they saw.
type harness struct {
	dir, repo, bin  string
	chPort, chHTTP  int
	pgPort          int
	walFS           string // a size-limited filesystem for instance A's log, or ""
	database        string
	instances       [2]*instance
	token, mcp, key string
	rules           map[string]bool // rule id → notify_on_resolve

	mu       sync.Mutex
	acked    map[string]bool // ids of batches answered 202
	statuses map[int]int     // every HTTP answer the clients got
	bad      []string        // 5xx answers other than 503
}

func run() int {
	seed := int64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1_000_000)))
	minutes, err := strconv.ParseFloat(env("CHAOS_MINUTES", "2"), 64)
	if err != nil || minutes <= 0 {
		fatalf("CHAOS_MINUTES: want a positive number of minutes")
	}
	h := &harness{
		dir: env("CHAOS_DIR", ""), repo: env("CHAOS_REPO", "."), bin: env("CHAOS_BIN", "bin/telemetryd"),
		chPort: envInt("CHAOS_CH_PORT", 31000), chHTTP: envInt("CHAOS_CH_HTTP_PORT", 31123), pgPort: envInt("CHAOS_PG_PORT", 31432),
		walFS: os.Getenv("CHAOS_WAL_FS"), database: fmt.Sprintf("chaos_%d", seed),
		acked: map[string]bool{}, statuses: map[int]int{}, rules: map[string]bool{},
	}
	if h.dir == "" {
		fatalf("CHAOS_DIR must name a work directory (scripts/chaos.sh makes one)")
	}
	ports := strings.Split(env("CHAOS_HTTP_PORTS", "31080,31081"), ",")
	if len(ports) != 2 {
		fatalf("CHAOS_HTTP_PORTS: want two ports")
	}
	total := time.Duration(minutes * float64(time.Minute))
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	sched := schedule(rng, total, h.walFS != "")
	fmt.Printf("chaos: seed %d, %.1f minutes (replay: CHAOS_SEED=%d CHAOS_MINUTES=%g make chaos)\n", seed, minutes, seed, minutes)
	if h.walFS == "" {
		fmt.Println("chaos: no size-limited filesystem for the log (CHAOS_WAL_FS): no disk-full faults")
	}
	fmt.Println("chaos: schedule")
	for _, f := range sched {
		fmt.Printf("  %s\n", f)
	}

	if err := h.startServers(); err != nil {
		return fail(err)
	}
	defer h.stopAll()
	for i, name := range []string{"a", "b"} {
		in := &instance{name: name, port: ports[i], h: h}
		in.wal = filepath.Join(h.dir, "wal-"+name)
		if name == "a" && h.walFS != "" {
			in.wal = filepath.Join(h.walFS, "wal")
		}
		h.instances[i] = in
		if err := in.start(); err != nil {
			return fail(err)
		}
	}
	if err := h.setUp(); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	var clients sync.WaitGroup
	clients.Go(func() { h.goClient(ctx, rng.Int64()) })
	clients.Go(func() { h.giveUpClient(ctx, rng.Int64()) })
	var sdkErr error
	clients.Go(func() { sdkErr = h.sdkClient(total) })

	start := time.Now()
	for _, f := range sched {
		if d := f.at - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		logf("fault: %s", f)
		if err := h.inject(f); err != nil {
			return fail(fmt.Errorf("fault %s: %w", f, err))
		}
	}
	<-ctx.Done()
	logf("load ends; waiting for the clients to finish their retries")
	clients.Wait()
	if sdkErr != nil {
		return fail(fmt.Errorf("TypeScript SDK client: %w", sdkErr))
	}
	return h.verdict(seed)
}

func fail(err error) int {
	fmt.Printf("chaos: verdict FAIL: %v\n", err)
	return 1
}

// fault is one entry of the schedule.
type fault struct {
	at, hold time.Duration
	kind     string // kill-a, kill-b, kill-clickhouse, kill-postgres, fill-disk
}

func (f fault) String() string {
	return fmt.Sprintf("at %5.1fs %-16s for %.1fs", f.at.Seconds(), f.kind, f.hold.Seconds())
}

// schedule draws the faults from the seed: one at a time, each held
// 1-8 s, 3-10 s apart, none in the last 15 s.
func schedule(rng *rand.Rand, total time.Duration, disk bool) []fault {
	kinds := []string{"kill-a", "kill-b", "kill-clickhouse", "kill-postgres"}
	if disk {
		kinds = append(kinds, "fill-disk")
	}
	var out []fault
	at := 5*time.Second + time.Duration(rng.IntN(5000))*time.Millisecond
	for at < total-15*time.Second {
		f := fault{at: at, kind: kinds[rng.IntN(len(kinds))]}
		switch f.kind {
		case "kill-a", "kill-b":
			f.hold = time.Duration(500+rng.IntN(2500)) * time.Millisecond
		default:
			f.hold = time.Duration(2000+rng.IntN(6000)) * time.Millisecond
		}
		out = append(out, f)
		at += f.hold + time.Duration(3000+rng.IntN(7000))*time.Millisecond
	}
	return out
}

func (h *harness) dbctl(args ...string) error {
	cmd := exec.Command(filepath.Join(h.repo, "scripts", "dbctl.sh"), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("dbctl %v: %v\n%s", args, err, out)
	}
	return nil
}

func (h *harness) dbDir() string { return filepath.Join(h.dir, "db") }

func (h *harness) startServers() error {
	if err := h.dbctl("start-ch", h.dbDir(), strconv.Itoa(h.chPort), strconv.Itoa(h.chHTTP)); err != nil {
		return err
	}
	return h.dbctl("start-pg", h.dbDir(), strconv.Itoa(h.pgPort))
}

func (h *harness) stopAll() {
	for _, in := range h.instances {
		if in != nil {
			in.kill()
		}
	}
	_ = h.dbctl("stop", h.dbDir())
}

func (h *harness) pgURL() string {
	return fmt.Sprintf("postgres://telemetry@127.0.0.1:%d/telemetry?sslmode=disable", h.pgPort)
}

// inject applies one fault and undoes it after its hold.
func (h *harness) inject(f fault) error {
	switch f.kind {
	case "kill-a", "kill-b":
		in := h.instances[0]
		if f.kind == "kill-b" {
			in = h.instances[1]
		}
		in.kill()
		time.Sleep(f.hold)
		return in.start()
	case "kill-clickhouse":
		if err := h.dbctl("kill-ch", h.dbDir()); err != nil {
			return err
		}
		time.Sleep(f.hold)
		return h.dbctl("start-ch", h.dbDir(), strconv.Itoa(h.chPort), strconv.Itoa(h.chHTTP))
	case "kill-postgres":
		if err := h.dbctl("kill-pg", h.dbDir()); err != nil {
			return err
		}
		time.Sleep(f.hold)
		return h.dbctl("start-pg", h.dbDir(), strconv.Itoa(h.pgPort))
	case "fill-disk":
		filler := filepath.Join(h.walFS, "filler")
		var st syscall.Statfs_t
		if err := syscall.Statfs(h.walFS, &st); err != nil {
			return err
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		if out, err := exec.Command("fallocate", "-l", strconv.FormatInt(free, 10), filler).CombinedOutput(); err != nil {
			// Not every filesystem takes fallocate: write it out.
			if out2, err2 := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M").CombinedOutput(); !bytes.Contains(out2, []byte("No space")) {
				return fmt.Errorf("fill %s: %v %s / %v %s", h.walFS, err, out, err2, out2)
			}
		}
		time.Sleep(f.hold)
		return os.Remove(filler)
	}
	return fmt.Errorf("unknown fault %q", f.kind)
}

// instance is one telemetryd process.
type instance struct {
	h          *harness
	name, port string
	wal        string
	mu         sync.Mutex
	cmd        *exec.Cmd
	starts     int
}

func (in *instance) base() string { return "http://127.0.0.1:" + in.port }

func (in *instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.starts++
	logPath := filepath.Join(in.h.dir, fmt.Sprintf("telemetryd-%s.%d.log", in.name, in.starts))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(in.h.bin, "serve")
	cmd.Dir = in.h.dir
	cmd.Env = append(os.Environ(),
		"TELEMETRY_SERVER_ADDR=127.0.0.1:"+in.port,
		"TELEMETRY_SERVER_BASE_URL="+in.base(),
		fmt.Sprintf("TELEMETRY_CLICKHOUSE_ADDR=127.0.0.1:%d", in.h.chPort),
		"TELEMETRY_CLICKHOUSE_DATABASE="+in.h.database,
		"TELEMETRY_POSTGRES_URL="+in.h.pgURL(),
		"TELEMETRY_INGEST_WAL_DIR="+in.wal,
		"TELEMETRY_INGEST_WAL_MAX_BYTES=33554432", "TELEMETRY_INGEST_WAL_SEGMENT_BYTES=4194304",
		"TELEMETRY_INGEST_NODE_ID=chaos-"+in.name,
		"TELEMETRY_INGEST_SHARED_DEDUP=true",
		"TELEMETRY_INGEST_FLUSH_INTERVAL=500ms",
		"TELEMETRY_INGEST_RATE_LIMIT_PER_MINUTE=1000000",
		"TELEMETRY_ALERTING_EVALUATE_INTERVAL=1s",
		"TELEMETRY_ALERTING_SECRET_KEY_FILE="+filepath.Join(in.h.dir, "secret.key"),
		"TELEMETRY_NIGHTLY_ENABLED=false",
		"TELEMETRY_LOG_LEVEL=info",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	go func() { _ = cmd.Wait(); logFile.Close() }()
	in.cmd = cmd
	logf("instance %s started (pid %d, log %s)", in.name, cmd.Process.Pid, logPath)
	return nil
}

func (in *instance) kill() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil && in.cmd.Process != nil {
		_ = in.cmd.Process.Signal(syscall.SIGKILL)
		for range 100 {
			if syscall.Kill(in.cmd.Process.Pid, 0) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		in.cmd = nil
	}
}

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

// verdict brings every server back, waits for both logs to drain, and
// checks what is stored.
func (h *harness) verdict(seed int64) int {
	for _, in := range h.instances {
		in.mu.Lock()
		dead := in.cmd == nil
		in.mu.Unlock()
		if dead {
			if err := in.start(); err != nil {
				return fail(err)
			}
		}
	}
	for _, in := range h.instances {
		if err := waitDrained(in); err != nil {
			return fail(err)
		}
	}
	var problems []string
	h.mu.Lock()
	if len(h.bad) > 0 {
		problems = append(problems, fmt.Sprintf("%d answers were a 5xx other than 503: %v", len(h.bad), h.bad[:min(len(h.bad), 10)]))
	}
	acked := len(h.acked)
	statuses := fmt.Sprint(h.statuses)
	h.mu.Unlock()
	n, err := h.checkEvents()
	if err != nil {
		problems = append(problems, err.Error())
	}
	if err := h.checkRollups(); err != nil {
		problems = append(problems, err.Error())
	}
	transitions, err := h.checkDeliveries()
	if err != nil {
		problems = append(problems, err.Error())
	}
	fmt.Printf("chaos: %d items acknowledged, %d stored; %d rule transitions; answers %s\n", acked, n, transitions, statuses)
	if transitions == 0 {
		problems = append(problems, "no rule transition happened: the delivery check proved nothing")
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Printf("chaos: problem: %s\n", p)
		}
		fmt.Printf("chaos: verdict FAIL (seed %d)\n", seed)
		return 1
	}
	fmt.Printf("chaos: verdict PASS (seed %d)\n", seed)
	return 0
}

// waitDrained waits until an instance answers and its log is empty.
func waitDrained(in *instance) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		backlog, err := metric(in.base()+"/metrics", "telemetry_wal_backlog_records")
		if err == nil && backlog == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instance %s: log not drained after 3 minutes (backlog %v, %v)", in.name, backlog, err)
		}
		time.Sleep(time.Second)
	}
}

func metric(u, name string) (float64, error) {
	res, err := http.Get(u)
	if err != nil {
		return -1, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(rest, 64)
		}
	}
	return -1, errors.New(name + " not exposed")
}

// chQuery runs a query on ClickHouse's HTTP interface and returns its TSV.
func (h *harness) chQuery(q string) (string, error) {
	res, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/", h.chHTTP), "text/plain", strings.NewReader(q))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return "", fmt.Errorf("clickhouse: %s\n%s", bytes.TrimSpace(b), q)
	}
	return string(b), nil
}

// checkEvents: every acknowledged id stored once, no id twice.
func (h *harness) checkEvents() (int, error) {
	out, err := h.chQuery(fmt.Sprintf("SELECT id, count() FROM %s.events WHERE mcp_id = '%s' GROUP BY id FORMAT TSV", h.database, h.mcp))
	if err != nil {
		return 0, err
	}
	stored := map[string]int{}
	var twice []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id, n, _ := strings.Cut(line, "\t")
		c, _ := strconv.Atoi(n)
		stored[id] = c
		if c > 1 {
			twice = append(twice, line)
		}
	}
	var missing []string
	h.mu.Lock()
	for id := range h.acked {
		if stored[id] == 0 {
			missing = append(missing, id)
		}
	}
	h.mu.Unlock()
	sort.Strings(missing)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d acknowledged items missing from events (e.g. %v)", len(missing), missing[:min(5, len(missing))]))
	}
	if len(twice) > 0 {
		problems = append(problems, fmt.Sprintf("%d items stored more than once (e.g. %v)", len(twice), twice[:min(5, len(twice))]))
	}
	if problems != nil {
		return len(stored), errors.New(strings.Join(problems, "; "))
	}
	return len(stored), nil
}

// checkRollups re-runs every view over the final events in a database of
// its own (telemetryd migrate, then one INSERT ... SELECT of events) and
// compares each rollup of the MCP with it, merged by its sorting key:
// every aggregate but the t-digest quantiles (approximate, and dependent
// on the order states merge in) must be equal.
func (h *harness) checkRollups() error {
	ref := h.database + "_ref"
	cmd := exec.Command(h.bin, "migrate")
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("TELEMETRY_CLICKHOUSE_ADDR=127.0.0.1:%d", h.chPort), "TELEMETRY_CLICKHOUSE_DATABASE="+ref,
		"TELEMETRY_POSTGRES_URL="+h.pgURL(), "TELEMETRY_ALERTING_SECRET_KEY_FILE="+filepath.Join(h.dir, "secret.key"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("migrate the reference database: %v\n%s", err, out)
	}
	if _, err := h.chQuery(fmt.Sprintf("INSERT INTO %s.events SELECT * FROM %s.events", ref, h.database)); err != nil {
		return err
	}
	tables, err := h.chQuery(fmt.Sprintf("SELECT name FROM system.tables WHERE database = '%s' AND engine IN ('AggregatingMergeTree', 'SummingMergeTree') ORDER BY name FORMAT TSV", h.database))
	if err != nil {
		return err
	}
	var problems []string
	checked := 0
	for _, table := range strings.Fields(tables) {
		cols, err := h.chQuery(fmt.Sprintf("SELECT name, type, is_in_sorting_key FROM system.columns WHERE database = '%s' AND table = '%s' FORMAT TSV", h.database, table))
		if err != nil {
			return err
		}
		var keys, aggs []string
		hasMCP := false
		for _, line := range strings.Split(strings.TrimSpace(cols), "\n") {
			f := strings.Split(line, "\t")
			name, typ, key := f[0], f[1], f[2] == "1"
			hasMCP = hasMCP || name == "mcp_id"
			switch {
			case key:
				keys = append(keys, name)
			case strings.Contains(typ, "TDigest") || strings.Contains(typ, "quantile"):
				// approximate: see above
			case strings.HasPrefix(typ, "AggregateFunction("):
				aggs = append(aggs, mergeOf(typ, name))
			default:
				aggs = append(aggs, "sum("+name+")")
			}
		}
		if !hasMCP || len(keys) == 0 || len(aggs) == 0 {
			continue
		}
		q := func(db string) string {
			return fmt.Sprintf("SELECT %s, %s FROM %s.%s WHERE mcp_id = '%s' GROUP BY %s ORDER BY %s FORMAT TSV",
				strings.Join(keys, ", "), strings.Join(aggs, ", "), db, table, h.mcp, strings.Join(keys, ", "), strings.Join(keys, ", "))
		}
		got, err := h.chQuery(q(h.database))
		if err != nil {
			return err
		}
		want, err := h.chQuery(q(ref))
		if err != nil {
			return err
		}
		checked++
		if got != want {
			problems = append(problems, fmt.Sprintf("rollup %s differs from its view re-run over events:\n%s", table, diffLines(got, want)))
		}
	}
	_, _ = h.chQuery("DROP DATABASE IF EXISTS " + ref)
	logf("rollups compared with their views re-run over events: %d", checked)
	if checked == 0 {
		return errors.New("no rollup was compared")
	}
	if problems != nil {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// mergeOf turns a column of type AggregateFunction(f(params), T...) into
// fMerge(params)(column).
func mergeOf(typ, col string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(typ, "AggregateFunction("), ")")
	depth, end := 0, len(inner)
	for i, r := range inner {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 && end == len(inner) {
				end = i
			}
		}
	}
	fn := strings.TrimSpace(inner[:end])
	if name, params, ok := strings.Cut(fn, "("); ok {
		return name + "Merge(" + params + "(" + col + ")"
	}
	return fn + "Merge(" + col + ")"
}

func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(g), len(w)) && shown < 5; i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "  stored:   %s\n  expected: %s\n", gl, wl)
			shown++
		}
	}
	return b.String()
}

// checkDeliveries: every transition of a rule made exactly one delivery
// per person and channel (firings; resolves too with notify_on_resolve).
func (h *harness) checkDeliveries() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, h.pgURL())
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	transitions := 0
	var problems []string
	for rule, onResolve := range h.rules {
		var fired, resolved int
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'fired'), count(*) FILTER (WHERE kind = 'resolved')
			FROM rule_events WHERE rule_id = $1`, rule).Scan(&fired, &resolved); err != nil {
			return 0, err
		}
		transitions += fired + resolved
		want := fired
		if onResolve {
			want += resolved
		}
		rows, err := conn.Query(ctx, `SELECT coalesce(recipient_user_id, ''), channel, count(*) FROM deliveries WHERE rule_id = $1 GROUP BY 1, 2`, rule)
		if err != nil {
			return 0, err
		}
		seen := 0
		for rows.Next() {
			var who, channel string
			var n int
			if err := rows.Scan(&who, &channel, &n); err != nil {
				return 0, err
			}
			seen++
			if n != want {
				problems = append(problems, fmt.Sprintf("rule %s: %d deliveries to %s by %s for %d fired and %d resolved, want %d",
					rule, n, who, channel, fired, resolved, want))
			}
		}
		rows.Close()
		if want > 0 && seen == 0 {
			problems = append(problems, fmt.Sprintf("rule %s: no delivery for %d transitions", rule, want))
		}
		logf("rule %s: fired %d, resolved %d, %d recipient-channel pairs", rule, fired, resolved, seen)
	}
	if problems != nil {
		return transitions, errors.New(strings.Join(problems, "; "))
	}
	return transitions, nil
}
