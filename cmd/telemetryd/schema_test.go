package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// telemetryd schema prints the DDL of each topology without a database
// (the configured addresses point nowhere here).
func TestSchemaCommand(t *testing.T) {
	t.Setenv("TELEMETRY_CLICKHOUSE_ADDR", "127.0.0.1:1")
	t.Setenv("TELEMETRY_CLICKHOUSE_DATABASE", "tele")
	for _, c := range []struct {
		args       []string
		has, lacks []string
	}{
		{[]string{"schema"}, []string{"CREATE TABLE IF NOT EXISTS tele.events\n", "ENGINE = MergeTree()"},
			[]string{"_local", "ON CLUSTER", "Replicated", "Distributed"}},
		{[]string{"schema", "--cluster", "c1"}, []string{"tele.events_local\n", "Distributed('c1', 'tele', 'events_local', cityHash64(mcp_id))"},
			[]string{"ON CLUSTER", "Replicated"}},
		{[]string{"schema", "--cluster", "c1", "--replicated"}, []string{
			"CREATE DATABASE IF NOT EXISTS tele ON CLUSTER 'c1';",
			"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/tele/events_local', '{replica}')",
			"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/tele/nightly_local', '{replica}', version)",
			"CREATE MATERIALIZED VIEW IF NOT EXISTS tele.mcp_daily_mv ON CLUSTER 'c1' TO tele.mcp_daily_local"},
			[]string{"ENGINE = MergeTree()\nPARTITION", "ENGINE = AggregatingMergeTree"}},
	} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), c.args, &out, &errb); err != nil {
			t.Fatalf("%v: %v (%s)", c.args, err, errb.String())
		}
		ddl := out.String()
		for _, s := range c.has {
			if !strings.Contains(ddl, s) {
				t.Errorf("%v: no %q in\n%.400s", c.args, s, ddl)
			}
		}
		for _, s := range c.lacks {
			if strings.Contains(ddl, s) {
				t.Errorf("%v: %q in the output", c.args, s)
			}
		}
		// Statements are ';'-terminated: 2 of bookkeeping and the
		// migrations' (28 on a single server, with a Distributed table per
		// table on a cluster).
		if n := strings.Count(ddl, ";\n"); n < 30 {
			t.Errorf("%v: %d statements", c.args, n)
		}
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"schema", "--replicated"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "--cluster") {
		t.Errorf("--replicated without a cluster: %v", err)
	}
}
