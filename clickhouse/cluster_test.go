package clickhouse_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// On a cluster, inserts through the Distributed table keep each MCP's rows
// and rollup rows on one shard, use every shard, and are readable at once
// (synchronous distributed inserts). The rest of the package's tests check
// the figures in cluster mode when run by `make test-cluster`.
func TestClusterShardsByMCP(t *testing.T) {
	t.Parallel()
	if testenv.ClickHouseCluster() == "" {
		t.Skip("single server; `make test-cluster` runs this on two shards")
	}
	db := openTestDB(t)
	ctx := context.Background()
	hosts, err := db.Hosts(ctx)
	if err != nil || len(hosts) < 2 {
		t.Fatalf("hosts %v, %v: want a cluster of at least two", hosts, err)
	}
	now := time.Now().UTC().Add(-time.Minute)
	var rows []analytics.StoredRow
	var mcps []string
	for m := 0; m < 16; m++ {
		id := fmt.Sprintf("mcp-%02d", m)
		mcps = append(mcps, id)
		for i := 0; i < 5; i++ {
			rows = append(rows, itemSpec{account: acct1, mcp: id, ts: now.Add(time.Duration(i) * time.Second),
				session: "s", method: analytics.MethodToolsCall, name: "t", id: fmt.Sprint(m, "-", i)}.row(uint64(m+1)))
		}
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	// Readable at once: the insert was acknowledged by the shards.
	o, err := db.Overview(ctx, "mcp-03", analytics.NewRange(now, now))
	if err != nil || o.Calls != 5 {
		t.Fatalf("overview right after the insert: %+v, %v", o, err)
	}
	if err := db.SyncReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	events, rollups, err := db.LocalMCPs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Replicas of a shard hold the same rows once synced; each shard's
	// rows count once.
	shards, err := db.ShardReplicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	i := 0
	for _, replicas := range shards {
		for r := range replicas {
			if len(events[i]) == 0 {
				t.Errorf("host %s holds no MCP: the sharding key does not spread", hosts[i])
			}
			if !slices.Equal(events[i], rollups[i]) {
				t.Errorf("host %s: events of %v, rollups of %v: views must read the shard's own rows", hosts[i], events[i], rollups[i])
			}
			if r == 0 {
				all = append(all, events[i]...)
			} else if !slices.Equal(events[i], events[i-r]) {
				t.Errorf("replica %s holds %v, its shard's first replica %v", hosts[i], events[i], events[i-r])
			}
			i++
		}
	}
	slices.Sort(all)
	if !slices.Equal(all, mcps) {
		t.Errorf("MCPs over the hosts: %v, want each of %v exactly once", all, mcps)
	}
	seqs, err := db.InsertedSeqs(ctx, "node-1", 0, 100, now.Add(-48*time.Hour), now.Add(time.Hour))
	if err != nil || len(seqs) < 16 { // 17 if the items span midnight
		t.Errorf("inserted seqs through the Distributed table: %v, %v", seqs, err)
	}
	n := 0
	if err := db.RecentIDs(ctx, now.Add(-time.Hour), func(string, string, time.Time) { n++ }); err != nil || n != len(rows) {
		t.Errorf("recent ids through the Distributed table: %d, %v", n, err)
	}
}
