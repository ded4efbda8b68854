package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// EnvClusterBin names the built telemetryd binary that `make test-cluster`
// runs the cluster test with.
const EnvClusterBin = "TELEMETRY_TEST_CLUSTER_BIN"

// instance is a telemetryd process of the test.
type instance struct {
	name, config, base string
	cmd                *exec.Cmd
	mu                 sync.Mutex
	log                bytes.Buffer
}

// logs returns the last 40 lines of the instance's log.
func (in *instance) logs() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(in.log.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// instanceConfig is the YAML configuration of a test instance.
func instanceConfig(dir, chAddr, database, cluster, pgURL, node, secretFile string) string {
	return fmt.Sprintf(`server: {addr: "127.0.0.1:0", base_url: "http://127.0.0.1"}
log: {level: info, format: json}
clickhouse: {addr: [%q], database: %q, cluster: %q, replicated: %t}
postgres: {url: %q}
ingest: {wal_dir: %q, node_id: %q, flush_interval: 200ms}
alerting: {secret_key_file: %q}
nightly: {enabled: false}
`, chAddr, database, cluster, cluster != "" && testenv.ClickHouseReplicated(), pgURL, filepath.Join(dir, "wal"), node, secretFile)
}

// startInstance runs `telemetryd serve` with the configuration, learns its
// address from its log, waits for /health and stops it (SIGTERM) when the
// test ends. Its log is printed if the test fails.
func startInstance(t *testing.T, bin, name, config string) *instance {
	t.Helper()
	dir := t.TempDir()
	in := &instance{name: name, config: filepath.Join(dir, "telemetryd.yaml")}
	if err := os.WriteFile(in.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	in.cmd = exec.Command(bin, "serve", "--config", in.config)
	in.cmd.Dir = dir
	stderr, err := in.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			in.mu.Lock()
			in.log.Write(sc.Bytes())
			in.log.WriteByte('\n')
			in.mu.Unlock()
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving the API" {
				addr <- l.Addr
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- in.cmd.Wait() }()
	t.Cleanup(func() {
		_ = in.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s exited with %v", name, err)
			}
		case <-time.After(30 * time.Second):
			_ = in.cmd.Process.Kill()
			t.Errorf("%s did not stop within 30 s of SIGTERM", name)
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, in.logs())
		}
	})
	select {
	case in.base = <-addr:
	case err := <-exited:
		t.Fatalf("%s exited during start-up (%v):\n%s", name, err, in.logs())
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not serve within 90 s:\n%s", name, in.logs())
	}
	eventually(t, 30*time.Second, func() error {
		if st, h := (api{t, in.base}).do("GET", "/health", "", nil); st != 200 {
			return fmt.Errorf("%s health: %d %v", name, st, h)
		}
		return nil
	})
	return in
}

// clusterDataSet is a known, deterministic data set for three MCPs over
// the ten days before today: sessions crossing midnight, tools (one with
// a slash, one in Chinese), errors, clients, users, items without
// duration or id, and a few invalid items. Each MCP's items have distinct
// timestamps (so "last message" and "first client" have one answer) and
// fewer than 200 items a day (so t-digest states are exact whatever the
// insert blocks: the comparison can demand equality).
func clusterDataSet(mcps []string) map[string][][]map[string]any {
	r := rand.New(rand.NewPCG(7, 11))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	tools := []string{"search_docs", "get_file", "a/b", "搜索", "deploy", "lint"}
	clients := [][2]string{{"claude-desktop", "0.9.1"}, {"claude-desktop", "1.0.0"}, {"cursor", "2.1"}, {"", ""}}
	errTypes := []string{"TimeoutError", "ValidationError", "UpstreamError"}
	out := map[string][][]map[string]any{}
	for mi, mcp := range mcps {
		var items []map[string]any
		used := map[int64]bool{}
		for d := 10; d >= 1; d-- {
			day := today.AddDate(0, 0, -d)
			n := 40 + r.IntN(60) + 30*mi
			for i := 0; i < n; i++ {
				ms := r.Int64N(24 * 3600 * 1000)
				for used[day.UnixMilli()+ms] {
					ms = (ms + 1) % (24 * 3600 * 1000)
				}
				used[day.UnixMilli()+ms] = true
				ts := day.Add(time.Duration(ms) * time.Millisecond)
				// Sessions of the last hour may run on after midnight.
				sess := fmt.Sprintf("s-%d-%d", d, r.IntN(12))
				if ms > 23*3600*1000 && d > 1 && r.IntN(2) == 0 {
					sess = fmt.Sprintf("s-%d-x", d-1)
				}
				it := map[string]any{"id": fmt.Sprintf("%s-%d-%d", mcp, d, i), "timestamp": ts.Format(time.RFC3339Nano),
					"session_id": sess, "server_version": "1.4.0"}
				switch k := r.IntN(20); {
				case k < 15:
					it["method"], it["name"] = "tools/call", tools[min(r.IntN(len(tools)), r.IntN(len(tools)))]
				case k < 17:
					it["method"], it["name"] = "resources/read", fmt.Sprintf("file:///docs/%d.md", r.IntN(5))
				case k < 19:
					it["method"], it["name"] = "prompts/get", "summarize"
				default:
					it["method"] = "initialize"
				}
				if r.IntN(10) > 0 {
					it["duration_ms"] = float64(r.IntN(20000)) / 10
				}
				if r.IntN(12) == 0 {
					it["status"] = "error"
					if r.IntN(4) > 0 {
						it["error_type"] = errTypes[r.IntN(len(errTypes))]
						it["error_message"] = fmt.Sprintf("failure %d of %s", i, mcp)
					}
				}
				if c := clients[r.IntN(len(clients))]; c[0] != "" {
					it["client_name"], it["client_version"] = c[0], c[1]
				}
				if r.IntN(5) > 0 {
					it["user_id"] = fmt.Sprintf("u-%d", r.IntN(25))
				}
				if r.IntN(40) == 0 {
					delete(it, "id")
				}
				items = append(items, it)
			}
		}
		r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		var batches [][]map[string]any
		for len(items) > 0 {
			n := min(len(items), 40+r.IntN(40))
			batch := items[:n]
			if r.IntN(4) == 0 { // invalid items are dropped, the rest kept
				batch = append(batch, map[string]any{"timestamp": today.Format(time.RFC3339), "method": "tools/call"})
			}
			batches = append(batches, batch)
			items = items[n:]
		}
		out[mcp] = batches
	}
	return out
}

// TestClusterMatchesSingleServer is `make test-cluster`: two telemetryd
// instances (the built binary) in cluster mode over two ClickHouse shards,
// and one on a single server, all on one PostgreSQL. The same data set is
// ingested through both cluster instances (each payload through one of
// them) and through the single-server one; every metric read must answer
// the same through all three, and each instance's /metrics must show its
// share of the work.
func TestClusterMatchesSingleServer(t *testing.T) {
	t.Parallel()
	bin, cluster := os.Getenv(EnvClusterBin), testenv.ClickHouseCluster()
	if bin == "" || cluster == "" {
		t.Skipf("needs %s and %s: run `make test-cluster`", EnvClusterBin, testenv.EnvClickHouseCluster)
	}
	chAddr, pgURL := testenv.ClickHouseAddr(t), pgURL(t)
	dbSingle, dbCluster := testenv.Name("single"), testenv.Name("cluster")
	t.Cleanup(func() {
		ctx := context.Background()
		for _, c := range []clickhouse.Config{{Addr: []string{chAddr}, Database: dbSingle}, {Addr: []string{chAddr}, Database: dbCluster, Cluster: cluster}} {
			if db, err := clickhouse.Open(ctx, c); err == nil {
				_ = chtest.DropDatabase(ctx, db)
				db.Close()
			}
		}
	})
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.key") // one key for every instance
	single := startInstance(t, bin, "single", instanceConfig(t.TempDir(), chAddr, dbSingle, "", pgURL, "single", secret))
	c1 := startInstance(t, bin, "cluster-1", instanceConfig(t.TempDir(), chAddr, dbCluster, cluster, pgURL, "cluster-1", secret))
	c2 := startInstance(t, bin, "cluster-2", instanceConfig(t.TempDir(), chAddr, dbCluster, cluster, pgURL, "cluster-2", secret))

	// Three MCPs, not all on one shard: MCPs are made until one lands on
	// a shard the others do not.
	a := api{t, c1.base}
	token, mcp1, key1 := a.newTenant("scale")
	mcps, keys := []string{mcp1}, map[string]string{mcp1: key1}
	shards := map[uint64]bool{shardOf(t, chAddr, mcp1): true}
	for i := 2; len(mcps) < 3; i++ {
		if i > 20 {
			t.Fatal("20 MCPs all on one shard: the sharding key does not spread")
		}
		id := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": fmt.Sprint("server ", i)})["id"].(string)
		shard := shardOf(t, chAddr, id)
		if len(mcps) == 2 && len(shards) == 1 && shards[shard] {
			continue
		}
		shards[shard] = true
		keys[id] = a.must(201, "POST", "/v1/mcps/"+id+"/keys", token, map[string]any{"name": "k"})["key"].(string)
		mcps = append(mcps, id)
	}

	// Ingest: each payload through the single server and through one of
	// the cluster instances, in turn; one payload is sent twice (a retry)
	// to the same instances.
	before := map[string]map[string]float64{c1.name: scrape(t, c1.base+"/metrics"), c2.name: scrape(t, c2.base+"/metrics")}
	data := clusterDataSet(mcps)
	sent := map[string]float64{}
	expected := map[string]float64{} // accepted items per MCP
	firstDay := time.Now().UTC().Format(time.DateOnly)
	turn := 0
	for _, mcp := range mcps {
		batches := data[mcp]
		batches = append(batches, batches[0])
		var first *instance
		for bi, batch := range batches {
			via := []*instance{c1, c2}[turn%2]
			turn++
			if bi == 0 {
				first = via
			} else if bi == len(batches)-1 {
				via = first // the retry reaches the instance of its first attempt
			}
			s1, r1 := postIngest(t, single.base, keys[mcp], batch, bi%2 == 0)
			s2, r2 := postIngest(t, via.base, keys[mcp], batch, bi%2 == 1)
			if s1 != 202 || s2 != 202 || !reflect.DeepEqual(r1, r2) {
				t.Fatalf("payload %d of %s: single %d %v, %s %d %v", bi, mcp, s1, r1, via.name, s2, r2)
			}
			if bi == len(batches)-1 && num(r1["accepted"]) != float64(withoutID(batch)) {
				t.Fatalf("the repeated payload: %v, want only its %d items without id accepted", r1, withoutID(batch))
			}
			sent[via.name] += num(r2["accepted"])
			expected[mcp] += num(r1["accepted"])
		}
	}
	sameDay := time.Now().UTC().Format(time.DateOnly) == firstDay

	// Readable through every instance.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	week := rangeQuery(today.AddDate(0, 0, -10), today)
	for _, in := range []*instance{single, c1, c2} {
		for _, mcp := range mcps {
			eventually(t, 30*time.Second, func() error {
				_, o := (api{t, in.base}).do("GET", "/v1/mcps/"+mcp+"/overview"+week, token, nil)
				if num(o["calls"]) != expected[mcp] {
					return fmt.Errorf("%s: %s has %v calls, want %v", in.name, mcp, o["calls"], expected[mcp])
				}
				return nil
			})
		}
	}

	// The nightly pass, by hand, on each store, once every insert has
	// ended (a read can see one rollup before the insert fed the others).
	for _, in := range []*instance{single, c1, c2} {
		settled(t, in.base+"/metrics")
	}
	for _, in := range []*instance{single, c1} {
		out, err := exec.Command(bin, "nightly", "--config", in.config).CombinedOutput()
		if err != nil {
			t.Fatalf("nightly on %s: %v\n%s", in.name, err, out)
		}
	}

	// Every read, through every instance, answers as the single server.
	o := get(t, single, token, "/v1/mcps/"+mcps[0]+"/overview"+week)
	if yesterday := today.AddDate(0, 0, -1).Format(time.DateOnly); o["nightly_as_of"] != yesterday {
		t.Fatalf("nightly_as_of %v, want %s: the nightly figures would not be compared", o["nightly_as_of"], yesterday)
	}
	paths := readPaths(t, single, token, mcps)
	if sameDay {
		paths = append(paths, "/v1/account/usage"+week)
	} else {
		t.Log("ingest crossed UTC midnight: usage (by acceptance day) is not compared")
	}
	for _, p := range paths {
		want := get(t, single, token, p)
		for _, in := range []*instance{c1, c2} {
			if diffs := jsonDiff("", want, get(t, in, token, p)); len(diffs) > 0 {
				t.Errorf("GET %s through %s differs from the single server: %s", p, in.name, strings.Join(diffs, "; "))
			}
		}
	}
	t.Logf("%d reads compared through each cluster instance", len(paths))
	checkShards(t, chAddr, dbCluster, cluster)

	// Each instance's /metrics shows its own part of the load.
	for _, in := range []*instance{c1, c2} {
		after := settled(t, in.base+"/metrics")
		moved(t, in.name, before[in.name], after, map[string]float64{
			`telemetry_ingest_items_total{outcome="accepted"}`:                                       sent[in.name],
			`telemetry_ingest_items_total{outcome="dropped"}`:                                        1,
			`telemetry_http_requests_total{method="POST",route="/v1/ingest",status="202"}`:           10,
			`telemetry_http_requests_total{method="GET",route="/v1/mcps/:id/overview",status="200"}`: 3,
			"telemetry_flush_batch_rows_count":                                                       1,
			"telemetry_flush_batch_rows_sum":                                                         sent[in.name],
			`telemetry_http_request_duration_seconds_count{method="POST",route="/v1/ingest"}`:        10,
		})
		if got := after[`telemetry_ingest_items_total{outcome="accepted"}`] - before[in.name][`telemetry_ingest_items_total{outcome="accepted"}`]; got != sent[in.name] {
			t.Errorf("%s accepted %v items by its /metrics, want %v", in.name, got, sent[in.name])
		}
	}
}

// shardOf is the shard (0-based) that the Distributed events table sends
// an MCP's rows to, for a cluster of two shards of equal weight.
func shardOf(t *testing.T, chAddr, mcpID string) uint64 {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var shard uint64
	if err := conn.QueryRow(context.Background(), "SELECT toUInt64(cityHash64(?) % 2)", mcpID).Scan(&shard); err != nil {
		t.Fatal(err)
	}
	return shard
}

// withoutID counts the valid items of a batch that carry no id (never
// duplicates).
func withoutID(batch []map[string]any) int {
	n := 0
	for _, it := range batch {
		if _, ok := it["id"]; !ok && it["session_id"] != nil {
			n++
		}
	}
	return n
}

func rangeQuery(from, to time.Time) string {
	return "?from=" + from.Format(time.DateOnly) + "&to=" + to.Format(time.DateOnly)
}

// readPaths lists every metric read of every MCP over several ranges, each
// tool of the MCP, and every sessions page (walked on the single server).
func readPaths(t *testing.T, single *instance, token string, mcps []string) []string {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	ranges := []string{
		rangeQuery(today.AddDate(0, 0, -10), today),
		rangeQuery(today.AddDate(0, 0, -3), today.AddDate(0, 0, -3)),
		rangeQuery(today.AddDate(0, 0, -6), today.AddDate(0, 0, -2)),
		rangeQuery(today.AddDate(0, 0, -40), today.AddDate(0, 0, -20)), // no data
	}
	var paths []string
	for _, mcp := range mcps {
		var tools struct{ Items []struct{ Name string } }
		decode(t, get(t, single, token, "/v1/mcps/"+mcp+"/tools"+ranges[0]), &tools)
		for _, r := range ranges {
			for _, read := range []string{"overview", "tools", "insights"} {
				paths = append(paths, "/v1/mcps/"+mcp+"/"+read+r)
			}
			for _, tool := range append(tools.Items, struct{ Name string }{"never-called"}) {
				paths = append(paths, "/v1/mcps/"+mcp+"/tools/"+url.PathEscape(tool.Name)+r)
			}
			for cursor, pages := "", 0; pages < 100; pages++ {
				p := "/v1/mcps/" + mcp + "/sessions" + r + "&limit=7"
				if cursor != "" {
					p += "&cursor=" + url.QueryEscape(cursor)
				}
				paths = append(paths, p)
				var page struct {
					NextCursor *string `json:"next_cursor"`
				}
				decode(t, get(t, single, token, p), &page)
				if page.NextCursor == nil {
					break
				}
				cursor = *page.NextCursor
			}
		}
	}
	return paths
}

// get returns the decoded response body, failing unless 200.
func get(t *testing.T, in *instance, token, path string) map[string]any {
	t.Helper()
	st, body := (api{t, in.base}).do("GET", path, token, nil)
	if st != 200 {
		t.Fatalf("GET %s through %s: %d %v", path, in.name, st, body)
	}
	return body
}

// decode converts a decoded JSON document into v.
func decode(t *testing.T, doc map[string]any, v any) {
	t.Helper()
	b, _ := json.Marshal(doc)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// jsonDiff lists where got differs from want. Everything must be equal,
// except that numbers may differ in their last bits (relative 1e-12):
// avg_ms divides a floating-point sum, whose rounding depends on the order
// of the additions, that is on how the rows were split into insert blocks
// (on one server too, between two runs).
func jsonDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
		}
		var diffs []string
		for k, v := range w {
			diffs = append(diffs, jsonDiff(path+"."+k, v, g[k])...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, jsonDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	case float64:
		if g, ok := got.(float64); ok && math.Abs(g-w) <= 1e-12*math.Abs(w) {
			return nil
		}
	default:
		if reflect.DeepEqual(want, got) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
}

// checkShards checks that every shard holds part of the data and that no
// MCP is on two shards.
func checkShards(t *testing.T, chAddr, database, cluster string) {
	t.Helper()
	ctx := context.Background()
	db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{chAddr}, Database: database, Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := db.Hosts(ctx)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if testenv.ClickHouseReplicated() {
		// Replicas of a shard hold the same rows: one per shard (two
		// replicas each in `make test-cluster`).
		var first []string
		for i := 0; i < len(hosts); i += 2 {
			first = append(first, hosts[i])
		}
		hosts = first
	}
	seen := map[string]string{}
	for _, h := range hosts {
		hc, err := ch.Open(&ch.Options{Addr: []string{h}})
		if err != nil {
			t.Fatal(err)
		}
		var mcps []string
		err = hc.QueryRow(ctx, "SELECT groupUniqArray(mcp_id) FROM "+database+".events_local WHERE mcp_id NOT LIKE '~wal/%'").Scan(&mcps)
		hc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(mcps) == 0 {
			t.Errorf("shard %s holds no rows", h)
		}
		for _, m := range mcps {
			if other, ok := seen[m]; ok {
				t.Errorf("MCP %s has rows on %s and %s", m, other, h)
			}
			seen[m] = h
		}
	}
	t.Logf("MCPs by shard: %v", seen)
}

// EnvClusterDir is the directory of `make test-cluster`'s servers
// (shard1/, shard2/), for the test that stops a shard.
const EnvClusterDir = "TELEMETRY_TEST_CLUSTER_DIR"

// With a shard down, ingest still answers 202 and reads answer 503; the
// flusher's insert stores the rows of the live shard and fails, and its
// retry leaves them out: once the shard is back, every item is readable
// exactly once.
func TestClusterShardDown(t *testing.T) {
	// Not parallel: it stops a shard (or a replica) that the other
	// cluster tests use; Go runs it before the parallel tests resume.
	dir, cluster := os.Getenv(EnvClusterDir), testenv.ClickHouseCluster()
	if dir == "" || cluster == "" {
		t.Skipf("needs %s and %s: run `make test-cluster`", EnvClusterDir, testenv.EnvClickHouseCluster)
	}
	chAddr := testenv.ClickHouseAddr(t)
	cfg := testConfig(t, chAddr) // in cluster mode
	m, base := startMain(t, cfg)
	a := api{t, base}
	token, first, firstKey := a.newTenant("outage")
	// One MCP on each shard.
	mcps, keys := map[uint64]string{shardOf(t, chAddr, first): first}, map[string]string{first: firstKey}
	for i := 0; len(mcps) < 2; i++ {
		if i == 20 {
			t.Fatal("20 MCPs on one shard")
		}
		id := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": fmt.Sprint("other ", i)})["id"].(string)
		if _, ok := mcps[shardOf(t, chAddr, id)]; !ok {
			mcps[shardOf(t, chAddr, id)] = id
			keys[id] = a.must(201, "POST", "/v1/mcps/"+id+"/keys", token, map[string]any{"name": "k"})["key"].(string)
		}
	}

	// Stop the second shard (restarted at the end even if the test fails).
	var port uint16
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(context.Background(), "SELECT port FROM system.clusters WHERE cluster = ? AND shard_num = 2", cluster).Scan(&port)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	dbctl := func(args ...string) {
		if out, err := testenv.Run(context.Background(), "../../scripts/dbctl.sh", args...); err != nil {
			t.Fatalf("dbctl.sh %v: %v\n%s", args, err, out)
		}
	}
	shard2 := filepath.Join(dir, "shard2")
	dbctl("stop-ch", shard2)
	t.Cleanup(func() { dbctl("start-ch", shard2, fmt.Sprint(port)) })

	before := scrape(t, base+"/metrics")
	for _, mcp := range []string{mcps[0], mcps[1]} { // in one flush
		if st, res := postIngest(t, base, keys[mcp], testItems(mcp, 30), false); st != 202 || num(res["accepted"]) != 30 {
			t.Fatalf("ingest with a shard down: %d %v", st, res)
		}
	}
	today := time.Now().UTC().Format(time.DateOnly)
	overview := "/v1/mcps/" + mcps[0] + "/overview?from=" + today + "&to=" + today
	eventually(t, 10*time.Second, func() error {
		if st, res := a.do("GET", overview, token, nil); st != 503 || res["code"] == nil {
			return fmt.Errorf("read with a shard down: %d %v, want a 503 problem", st, res)
		}
		if f := scrape(t, base+"/metrics")["telemetry_flush_failures_total"]; f == before["telemetry_flush_failures_total"] {
			return fmt.Errorf("no failed flush yet")
		}
		if m.Ingest.Stats().UnackedRecords == 0 {
			return fmt.Errorf("the log was freed while a shard is down")
		}
		return nil
	})

	// Whether the failed insert kept the live shard's rows depends on the
	// server (18.16 keeps them if the live shard is not the one the insert
	// was sent to); the retry must be right either way.
	live := func() uint64 {
		conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var n uint64
		if err := conn.QueryRow(context.Background(), "SELECT count() FROM "+cfg.ClickHouse.Database+".events_local WHERE mcp_id = ?", mcps[0]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Logf("the live shard holds %d of its MCP's 30 rows during the outage", live())

	dbctl("start-ch", shard2, fmt.Sprint(port))
	for _, mcp := range []string{mcps[0], mcps[1]} {
		eventually(t, 60*time.Second, func() error {
			st, o := a.do("GET", "/v1/mcps/"+mcp+"/overview?from="+today+"&to="+today, token, nil)
			if st != 200 || num(o["calls"]) != 30 {
				return fmt.Errorf("%s after the shard came back: %d, calls %v, want 30 (each item once)", mcp, st, o["calls"])
			}
			return nil
		})
	}
	if n := live(); n != 30 {
		t.Errorf("the live shard holds %d rows of its MCP, want 30: the retry inserted them again", n)
	}
}
