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
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
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
	dir, repo, bin string
	chPort, chHTTP int // the server the verdict reads (replicated: the last node)
	// replicated: CHAOS_CLUSTER=replicated, two shards of two replicas
	// each (ZooKeeper on zkPort), nodes on chPorts, HTTP on port+httpOffset.
	replicated      bool
	mode            string // replays the mode: "" or "CHAOS_CLUSTER=replicated "
	chPorts         []int
	zkPort          int
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
	h.clusterFromEnv()
	ports := strings.Split(env("CHAOS_HTTP_PORTS", "31080,31081"), ",")
	if len(ports) != 2 {
		fatalf("CHAOS_HTTP_PORTS: want two ports")
	}
	total := time.Duration(minutes * float64(time.Minute))
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	sched := schedule(rng, total, h.walFS != "", len(h.chPorts))
	fmt.Printf("chaos: seed %d, %.1f minutes (replay: %sCHAOS_SEED=%d CHAOS_MINUTES=%g make chaos)\n", seed, minutes, h.mode, seed, minutes)
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

// clusterFromEnv reads CHAOS_CLUSTER: empty, one ClickHouse server;
// replicated, make test-cluster's replicated topology on CHAOS_CH_PORTS
// and CHAOS_ZK_PORT, the verdict reading through the last node.
func (h *harness) clusterFromEnv() {
	switch c := os.Getenv("CHAOS_CLUSTER"); c {
	case "":
	case "replicated":
		h.replicated, h.zkPort = true, envInt("CHAOS_ZK_PORT", 31181)
		for _, p := range strings.Split(env("CHAOS_CH_PORTS", "31141,31142,31143,31144"), ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				fatalf("CHAOS_CH_PORTS: %v", err)
			}
			h.chPorts = append(h.chPorts, n)
		}
		if len(h.chPorts) != 4 {
			fatalf("CHAOS_CH_PORTS: want four ports (two shards of two replicas)")
		}
		h.chPort, h.chHTTP = h.chPorts[3], h.chPorts[3]+httpOffset
		h.mode = "CHAOS_CLUSTER=replicated "
		fmt.Println("chaos: replicated ClickHouse: two shards of two replicas, ZooKeeper; kill-replica faults")
	default:
		fatalf("CHAOS_CLUSTER: want empty (one server) or replicated, got %q", c)
	}
}

func fail(err error) int {
	fmt.Printf("chaos: verdict FAIL: %v\n", err)
	return 1
}
