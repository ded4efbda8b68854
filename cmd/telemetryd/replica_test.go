package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestReplicaLoss is `make test-cluster`'s replicated topology: two shards
// of two replicas (ZooKeeper on loopback), two telemetryd instances on
// them and one on a single server. Under ingest, the replica that takes a
// shard's inserts and reads (the first: load_balancing in_order) is
// killed with SIGKILL: ingest keeps answering 202 and reads keep
// answering 200 through the other replica; the replica comes back and
// catches up (same rows as its peer); every read through both cluster
// instances equals the single server's, so nothing acknowledged was lost
// or stored twice.
func TestReplicaLoss(t *testing.T) {
	// Not parallel: it stops a shard (or a replica) that the other
	// cluster tests use; Go runs it before the parallel tests resume.
	bin, dir, cluster := os.Getenv(EnvClusterBin), os.Getenv(EnvClusterDir), testenv.ClickHouseCluster()
	if bin == "" || dir == "" || !testenv.ClickHouseReplicated() {
		t.Skipf("needs the replicated topology of `make test-cluster` (%s, %s, %s=1)", EnvClusterBin, EnvClusterDir, testenv.EnvClickHouseReplicated)
	}
	chAddr, pgURL := testenv.ClickHouseAddr(t), pgURL(t)
	ctx := context.Background()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	var shard1 []string
	rows, err := conn.Query(ctx, "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", cluster)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s uint32
		var h string
		var p uint16
		if err := rows.Scan(&s, &h, &p); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, fmt.Sprintf("%s:%d", h, p))
		if s == 1 {
			shard1 = append(shard1, fmt.Sprintf("%s:%d", h, p))
		}
	}
	rows.Close()
	conn.Close()
	if len(hosts) != 4 || len(shard1) != 2 {
		t.Fatalf("hosts %v: want two shards of two replicas", hosts)
	}
	victim, victimDir := shard1[0], filepath.Join(dir, "node1")
	// The single server: a plain database on the last host (never killed).
	singleAddr := hosts[3]
	dbSingle, dbCluster := testenv.Name("single"), testenv.Name("repl")
	t.Cleanup(func() {
		for _, c := range []clickhouse.Config{{Addr: []string{singleAddr}, Database: dbSingle},
			{Addr: []string{hosts[3]}, Database: dbCluster, Cluster: cluster, Replicated: true}} {
			if db, err := clickhouse.Open(ctx, c); err == nil {
				_ = chtest.DropDatabase(ctx, db)
				db.Close()
			}
		}
	})
	config := func(addrs []string, database, cluster, node string, replicated bool, secret string) string {
		return fmt.Sprintf(`server: {addr: "127.0.0.1:0", base_url: "http://127.0.0.1"}
log: {level: info, format: json}
clickhouse: {addr: ["%s"], database: %q, cluster: %q, replicated: %t}
postgres: {url: %q}
ingest: {wal_dir: %q, node_id: %q, flush_interval: 200ms}
alerting: {secret_key_file: %q}
nightly: {enabled: false}
`, strings.Join(addrs, `", "`), database, cluster, replicated, pgURL, filepath.Join(t.TempDir(), "wal"), node, secret)
	}
	secret := filepath.Join(t.TempDir(), "secret.key")
	single := startInstance(t, bin, "single", config([]string{singleAddr}, dbSingle, "", "single", false, secret))
	// Every host is listed: the pool fails over when the first is killed.
	c1 := startInstance(t, bin, "repl-1", config(hosts, dbCluster, cluster, "repl-1", true, secret))
	c2 := startInstance(t, bin, "repl-2", config(hosts, dbCluster, cluster, "repl-2", true, secret))

	a := api{t, c1.base}
	token, first, firstKey := a.newTenant("replicas")
	mcps, keys := []string{first}, map[string]string{first: firstKey}
	// Four MCPs, at least one on each shard (the killed replica's must
	// hold some).
	shards := map[uint64]int{shardOf(t, chAddr, first): 1}
	for i := 0; len(mcps) < 4 || len(shards) < 2; i++ {
		if i == 20 {
			t.Fatal("20 MCPs all on one shard")
		}
		id := a.must(201, "POST", "/v1/mcps", token, map[string]any{"name": fmt.Sprint("server ", i)})["id"].(string)
		s := shardOf(t, chAddr, id)
		if len(mcps) >= 3 && len(shards) < 2 && shards[s] > 0 {
			continue
		}
		shards[s]++
		keys[id] = a.must(201, "POST", "/v1/mcps/"+id+"/keys", token, map[string]any{"name": "k"})["key"].(string)
		mcps = append(mcps, id)
	}

	// Ingest: payloads of 20 items with ids, each through the single
	// server and one cluster instance in turn, until stopped.
	var (
		mu       sync.Mutex
		posted   int
		failures []string
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			mcp := mcps[n%len(mcps)]
			items := testItems(fmt.Sprintf("%s-p%d", mcp, n), 20)
			via := []*instance{c1, c2}[n%2]
			s1, _ := postIngest(t, single.base, keys[mcp], items, false)
			s2, _ := postIngest(t, via.base, keys[mcp], items, n%3 == 0)
			mu.Lock()
			posted++
			if s1 != 202 || s2 != 202 {
				failures = append(failures, fmt.Sprintf("payload %d: single %d, %s %d", n, s1, via.name, s2))
			}
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	postedNow := func() int { mu.Lock(); defer mu.Unlock(); return posted }
	eventually(t, 30*time.Second, func() error {
		if p := postedNow(); p < 20 {
			return fmt.Errorf("%d payloads so far", p)
		}
		return nil
	})

	// SIGKILL the replica taking shard 1's inserts.
	dbctl := func(args ...string) {
		if out, err := testenv.Run(ctx, "../../scripts/dbctl.sh", args...); err != nil {
			t.Fatalf("dbctl.sh %v: %v\n%s", args, err, out)
		}
	}
	_, port, _ := strings.Cut(victim, ":")
	dbctl("kill-ch", victimDir)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			dbctl("start-ch", victimDir, port)
		}
	})
	killedAt := postedNow()
	today := time.Now().UTC().Format(time.DateOnly)
	reads := 0
	// The first read after the kill may meet a pooled connection to the
	// killed server (503 with Retry-After); the next ones go to the live
	// replica.
	unavailable := 0
	for _, in := range []*instance{c1, c2} {
		for _, mcp := range mcps {
			eventually(t, 10*time.Second, func() error {
				st, res := (api{t, in.base}).do("GET", "/v1/mcps/"+mcp+"/overview?from="+today+"&to="+today, token, nil)
				if st != 200 {
					unavailable++
					return fmt.Errorf("read through %s with a replica down: %d %v", in.name, st, res)
				}
				return nil
			})
			reads++
		}
	}
	eventually(t, 60*time.Second, func() error {
		if p := postedNow(); p < killedAt+40 {
			return fmt.Errorf("%d payloads since the kill", p-killedAt)
		}
		return nil
	})
	t.Logf("%d payloads posted before the kill, %d while the replica was down; %d reads answered 200 meanwhile (after %d retried 503s)", killedAt, postedNow()-killedAt, reads, unavailable)

	dbctl("start-ch", victimDir, port)
	restarted = true
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	mu.Lock()
	if len(failures) > 0 {
		t.Errorf("%d payloads not answered 202: %v", len(failures), failures[:min(5, len(failures))])
	}
	mu.Unlock()

	// The replicas catch up with each other: the killed one fetches what
	// it missed, and its peer what only the killed one had committed (an
	// instance whose insert the kill cut waits for that before its retry
	// judges what is stored, docs/operations.md, "What a lost replica costs"). Then
	// every instance has flushed its log, and the replicas are synced again.
	db, err := clickhouse.Open(ctx, clickhouse.Config{Addr: []string{hosts[3]}, Database: dbCluster, Cluster: cluster, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eventually(t, 90*time.Second, func() error { return db.SyncReplicas(ctx) })
	for _, in := range []*instance{single, c1, c2} {
		settledWithin(t, in.base+"/metrics", 60*time.Second)
	}
	eventually(t, 60*time.Second, func() error { return db.SyncReplicas(ctx) })
	var counts []uint64
	for _, h := range shard1 {
		hc, err := ch.Open(&ch.Options{Addr: []string{h}})
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		err = hc.QueryRow(ctx, "SELECT count() FROM "+dbCluster+".events_local").Scan(&n)
		hc.Close()
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
	}
	if counts[0] == 0 || counts[0] != counts[1] {
		t.Errorf("shard 1's replicas hold %v rows: the killed one has not caught up", counts)
	}

	// Where the items are, by table and host, for a failure's diagnosis.
	diagnose := func() {
		for _, h := range hosts {
			hc, err := ch.Open(&ch.Options{Addr: []string{h}})
			if err != nil {
				continue
			}
			for _, q := range []string{"SELECT mcp_id, count(), uniqExact(" + clickhouse.EventID + ") FROM " + dbCluster + ".events_local GROUP BY mcp_id ORDER BY mcp_id",
				"SELECT mcp_id, countMerge(calls) FROM " + dbCluster + ".mcp_daily_local GROUP BY mcp_id ORDER BY mcp_id"} {
				rows, err := hc.Query(ctx, q)
				if err != nil {
					t.Logf("%s: %v", h, err)
					continue
				}
				var out []string
				for rows.Next() {
					vals := make([]any, len(rows.Columns()))
					for i, c := range rows.ColumnTypes() {
						vals[i] = reflect.New(c.ScanType()).Interface()
					}
					_ = rows.Scan(vals...)
					var f []string
					for _, v := range vals {
						f = append(f, fmt.Sprint(reflect.ValueOf(v).Elem().Interface()))
					}
					out = append(out, strings.Join(f, " "))
				}
				rows.Close()
				t.Logf("%s %s: %v", h, q[:40], out)
			}
			hc.Close()
		}
	}

	// Nothing acknowledged is lost or stored twice in the raw table: per
	// MCP, the cluster's events hold exactly the single server's items.
	defer func() {
		if t.Failed() {
			diagnose()
		}
	}()
	rawCount := func(addr, database string, mcp string) (n, ids uint64) {
		hc, err := ch.Open(&ch.Options{Addr: []string{addr}})
		if err != nil {
			t.Fatal(err)
		}
		defer hc.Close()
		if err := hc.QueryRow(ctx, "SELECT count(), uniqExact("+clickhouse.EventID+") FROM "+database+".events WHERE mcp_id = ?", mcp).Scan(&n, &ids); err != nil {
			t.Fatal(err)
		}
		return n, ids
	}
	for _, mcp := range mcps {
		want, _ := rawCount(singleAddr, dbSingle, mcp)
		got, ids := rawCount(hosts[3], dbCluster, mcp)
		if want == 0 || got != want || ids != got {
			t.Errorf("%s: the cluster's events hold %d items (%d ids), the single server's %d", mcp, got, ids, want)
		}
	}

	// Every rollup counts each item once, on both shards: an insert cut by
	// the SIGKILL after the raw table took its block and before every
	// rollup view did is completed by the flusher's retry (the insert
	// ledger, clickhouse/ledger.go), once the surviving replica has fetched
	// what its shard committed.
	hc, err := ch.Open(&ch.Options{Addr: []string{hosts[3]}})
	if err != nil {
		t.Fatal(err)
	}
	for _, mcp := range mcps {
		// Every item of this test is a tools/call with a client-less
		// session: each rollup counts each item once.
		var raw uint64
		q := "SELECT count() FROM " + dbCluster + ".events WHERE mcp_id = ?"
		if err := hc.QueryRow(ctx, q, mcp).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{"countMerge(calls) FROM mcp_daily", "countMerge(calls) FROM tool_daily", "countMerge(calls) FROM session_daily",
			"countMerge(calls) FROM client_daily", "toUInt64(sum(calls)) FROM tool_client_daily", "toUInt64(sum(calls)) FROM user_daily",
			"toUInt64(sum(events)) FROM usage_daily", "countMerge(calls) FROM tool_monthly", "countMerge(calls) FROM client_monthly"} {
			sel, table, _ := strings.Cut(r, " FROM ")
			var n uint64
			if err := hc.QueryRow(ctx, "SELECT "+sel+" FROM "+dbCluster+"."+table+" WHERE mcp_id = ?", mcp).Scan(&n); err != nil {
				t.Fatal(err)
			}
			switch {
			case n > raw:
				t.Errorf("%s: %s counts %d items, events %d: counted twice", mcp, table, n, raw)
			case n < raw:
				t.Errorf("%s (shard %d): %s counts %d items, events %d: short", mcp, shardOf(t, chAddr, mcp)+1, table, n, raw)
			}
		}
	}
	hc.Close()
	for _, in := range []*instance{c1, c2} {
		t.Logf("%s completed %v (insert, rollup) pairs after inserts cut short", in.name,
			scrape(t, in.base+"/metrics")["telemetry_flush_views_completed_total"])
	}
	paths := readPaths(t, single, token, mcps)
	compared := 0
	for _, p := range paths {
		compared++
		want := get(t, single, token, p)
		for _, in := range []*instance{c1, c2} {
			if diffs := exactDiffs(jsonDiff("", want, get(t, in, token, p))); len(diffs) > 0 {
				t.Errorf("GET %s through %s differs from the single server: %s", p, in.name, strings.Join(diffs, "; "))
			}
		}
	}
	t.Logf("%d reads compared through each cluster instance; shard 1's replicas hold %v rows", compared, counts)
}

// exactDiffs drops the differences of percentiles within 5%: t-digest
// estimates depend on how the items were grouped into inserts, which the
// instances' flush timing decides here (the single server and the cluster
// got the same items in different batches). Counts, sums and everything
// else must be equal.
func exactDiffs(diffs []string) []string {
	var out []string
	for _, d := range diffs {
		path, vals, _ := strings.Cut(d, ": ")
		got, want, _ := strings.Cut(vals, ", want ")
		g, err1 := strconv.ParseFloat(got, 64)
		w, err2 := strconv.ParseFloat(want, 64)
		if (strings.Contains(path, "p50_ms") || strings.Contains(path, "p95_ms") || strings.Contains(path, "p99_ms")) &&
			err1 == nil && err2 == nil && math.Abs(g-w) <= 0.05*math.Max(math.Abs(g), math.Abs(w)) {
			continue
		}
		out = append(out, d)
	}
	return out
}
