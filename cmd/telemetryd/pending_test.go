package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// tryIngest posts items and returns the status, or the transport error
// (an instance killed mid-request).
func tryIngest(base, key string, items []map[string]any) (int, map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"items": items})
	req, _ := http.NewRequest("POST", base+"/v1/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m, nil
}

// storedPerID counts the events of an MCP by item id.
func storedPerID(t *testing.T, cfg Config, mcp, prefix string) map[string]uint64 {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: cfg.ClickHouse.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(context.Background(), fmt.Sprintf(
		"SELECT %[1]s AS item_id, count() FROM %[2]s.events WHERE mcp_id = ? AND startsWith(%[1]s, ?) GROUP BY item_id", clickhouse.EventID, cfg.ClickHouse.Database), mcp, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]uint64{}
	for rows.Next() {
		var id string
		var n uint64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		got[id] = n
	}
	return got
}

// exactlyOnce waits until each of the n items prefix-0..n-1 is stored
// once, and fails on any stored twice.
func exactlyOnce(t *testing.T, cfg Config, mcp, prefix string, n int) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		got := storedPerID(t, cfg, mcp, prefix+"-")
		for id, c := range got {
			if c != 1 {
				t.Fatalf("item %s stored %d times", id, c)
			}
		}
		if len(got) != n {
			return fmt.Errorf("%s: %d of %d items stored", prefix, len(got), n)
		}
		return nil
	})
}

// With shared dedup, a payload is appended to the instance's log before
// its ids are claimed in PostgreSQL. An instance killed (SIGKILL) between
// the two holds the payload in its log and no claim: the client's retry on
// another instance is accepted whole there, and the restarted instance's
// replay finds every id owned by the other instance's record and leaves
// its copy out. Killed after its claim and before its answer, the
// instance owns the ids: the retry elsewhere is a duplicate (202, nothing
// accepted) and the restarted instance stores its copy. Without a retry
// the restarted instance stores the payload. Every item is stored once.
func TestSharedDedupCrashWindows(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	bin := buildBinary(t)
	portA, portB := testenv.FreePort(t), testenv.FreePort(t)
	walA := t.TempDir()
	shared := []string{"TELEMETRY_INGEST_SHARED_DEDUP=true", "TELEMETRY_INGEST_FLUSH_INTERVAL=200ms"}
	envA := append([]string{"TELEMETRY_INGEST_NODE_ID=node-a", "TELEMETRY_INGEST_WAL_DIR=" + walA}, shared...)
	cfgB := cfg
	cfgB.Ingest.WALDir = t.TempDir()
	b := startBinary(t, bin, cfgB, portB, append([]string{"TELEMETRY_INGEST_NODE_ID=node-b"}, shared...)...)
	_, mcp, key := api{t, b.base}.newTenant("crashwin")

	killedAt := func(point, prefix string) {
		a := startBinary(t, bin, cfg, portA, append(envA, "TELEMETRY_TEST_FAILPOINT="+point)...)
		if status, res, err := tryIngest(a.base, key, testItems(prefix, 20)); err == nil {
			t.Fatalf("%s: the instance answered %d %v instead of dying at its failpoint", point, status, res)
		}
		_ = a.cmd.Wait()
		if !strings.Contains(a.cmd.ProcessState.String(), "killed") {
			t.Fatalf("%s: instance ended with %v, want killed", point, a.cmd.ProcessState)
		}
	}
	retry := func(prefix string, wantAccepted float64) {
		status, res, err := tryIngest(b.base, key, testItems(prefix, 20))
		if err != nil || status != 202 || num(res["accepted"]) != wantAccepted {
			t.Fatalf("%s: retry on the other instance = %d %v %v; want 202 with %v accepted", prefix, status, res, err, wantAccepted)
		}
		if status, res, _ := tryIngest(b.base, key, testItems(prefix, 20)); status != 202 || num(res["accepted"]) != 0 {
			t.Fatalf("%s: a second retry = %d %v, want 202 with nothing accepted", prefix, status, res)
		}
	}
	restartA := func() *service {
		a := startBinary(t, bin, cfg, portA, envA...)
		settled(t, a.base+"/metrics")
		return a
	}
	stop := func(a *service) {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
	}

	// In the log, not claimed; the retry elsewhere is the one stored.
	killedAt("after-append", "appended")
	retry("appended", 20)
	a := restartA()
	exactlyOnce(t, cfg, mcp, "appended", 20)
	if m := scrape(t, a.base+"/metrics"); m["telemetry_flush_duplicates_total"] < 20 {
		t.Errorf("the restarted instance left out %v items at flush, want its 20 copies", m["telemetry_flush_duplicates_total"])
	}
	stop(a)

	// Claimed, not answered: the retry is a duplicate, the log's copy is stored.
	killedAt("after-claim", "claimed")
	retry("claimed", 0)
	stop(restartA())
	exactlyOnce(t, cfg, mcp, "claimed", 20)

	// No retry: the restarted instance claims and stores the payload.
	killedAt("after-append", "unretried")
	restartA()
	exactlyOnce(t, cfg, mcp, "unretried", 20)
}
