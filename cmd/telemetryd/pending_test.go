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
		"SELECT id, count() FROM %s.events WHERE mcp_id = ? AND startsWith(id, ?) GROUP BY id", cfg.ClickHouse.Database), mcp, prefix)
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

// With shared dedup, an instance killed (SIGKILL) between its reservation
// of a payload's ids and its log write leaves a pending reservation, not an
// acceptance: the client's retry on another instance is refused 503 while
// the reservation is pending, then accepted once it expires, and stored
// once. Killed after its log write and before its confirmation, the
// instance holds the payload in its log: a retry elsewhere takes the
// expired reservation over and the restarted instance leaves its copy out;
// without a retry the restarted instance stores it.
func TestSharedDedupPendingReservation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	bin := buildBinary(t)
	portA, portB := testenv.FreePort(t), testenv.FreePort(t)
	walA := t.TempDir()
	shared := []string{"TELEMETRY_INGEST_SHARED_DEDUP=true", "TELEMETRY_INGEST_PENDING_TTL=2s", "TELEMETRY_INGEST_FLUSH_INTERVAL=200ms"}
	envA := append([]string{"TELEMETRY_INGEST_NODE_ID=node-a", "TELEMETRY_INGEST_WAL_DIR=" + walA}, shared...)
	cfgB := cfg
	cfgB.Ingest.WALDir = t.TempDir()
	b := startBinary(t, bin, cfgB, portB, append([]string{"TELEMETRY_INGEST_NODE_ID=node-b"}, shared...)...)
	_, mcp, key := api{t, b.base}.newTenant("pending")

	killedAt := func(point, prefix string) *service {
		a := startBinary(t, bin, cfg, portA, append(envA, "TELEMETRY_TEST_FAILPOINT="+point)...)
		if status, res, err := tryIngest(a.base, key, testItems(prefix, 20)); err == nil {
			t.Fatalf("%s: the instance answered %d %v instead of dying at its failpoint", point, status, res)
		}
		_ = a.cmd.Wait()
		if !strings.Contains(a.cmd.ProcessState.String(), "killed") {
			t.Fatalf("%s: instance ended with %v, want killed", point, a.cmd.ProcessState)
		}
		return a
	}
	retryUntilAccepted := func(prefix string) {
		status, res, err := tryIngest(b.base, key, testItems(prefix, 20))
		if err != nil || status != 503 {
			t.Fatalf("%s: retry while the dead instance's reservation is pending = %d %v %v; want 503", prefix, status, res, err)
		}
		eventually(t, 10*time.Second, func() error {
			status, res, err := tryIngest(b.base, key, testItems(prefix, 20))
			if err != nil {
				return err
			}
			if status != 202 {
				return fmt.Errorf("retry: %d %v", status, res)
			}
			if num(res["accepted"]) != 20 {
				t.Fatalf("%s: retry accepted %v, want all 20", prefix, res)
			}
			return nil
		})
		if status, res, _ := tryIngest(b.base, key, testItems(prefix, 20)); status != 202 || num(res["accepted"]) != 0 {
			t.Fatalf("%s: a second retry = %d %v, want 202 with nothing accepted", prefix, status, res)
		}
	}

	killedAt("after-reserve", "reserved")
	retryUntilAccepted("reserved")
	exactlyOnce(t, cfg, mcp, "reserved", 20)

	killedAt("after-append", "appended")
	retryUntilAccepted("appended")
	a := startBinary(t, bin, cfg, portA, envA...) // replays its copy of "appended"
	settled(t, a.base+"/metrics")
	exactlyOnce(t, cfg, mcp, "appended", 20)

	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	killedAt("after-append", "unretried")
	a = startBinary(t, bin, cfg, portA, envA...)
	settled(t, a.base+"/metrics")
	exactlyOnce(t, cfg, mcp, "unretried", 20)
}
