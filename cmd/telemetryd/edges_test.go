package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// The tests of this file drive the real binary through the edges of "202
// means durable and counted once": a restart during a ClickHouse outage, a
// log directory that cannot be written, a log directory replaced.

// edgeService is the binary run with the test's configuration and extra
// environment; unlike startBinary it waits only until the API listens, as
// /health may rightly be 503.
type edgeService struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	logs *bytes.Buffer
}

func startEdge(t *testing.T, bin string, cfg Config, port int, env ...string) *edgeService {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "serve")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"TELEMETRY_SERVER_ADDR="+addr,
		"TELEMETRY_CLICKHOUSE_ADDR="+cfg.ClickHouse.Addr[0],
		"TELEMETRY_CLICKHOUSE_DATABASE="+cfg.ClickHouse.Database,
		"TELEMETRY_CLICKHOUSE_DIAL_TIMEOUT=1s",
		"TELEMETRY_POSTGRES_URL="+cfg.Postgres.URL,
		"TELEMETRY_INGEST_WAL_DIR="+cfg.Ingest.WALDir,
		"TELEMETRY_INGEST_NODE_ID=edge-test",
		"TELEMETRY_INGEST_FLUSH_INTERVAL=200ms",
		"TELEMETRY_ALERTING_SECRET_KEY_FILE="+cfg.Alerting.SecretKeyFile,
		"TELEMETRY_NIGHTLY_ENABLED=false",
		"TELEMETRY_LOG_LEVEL=info",
	)
	cmd.Env = append(cmd.Env, env...)
	s := &edgeService{t: t, cmd: cmd, base: "http://" + addr, logs: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("service log:\n%s", s.logs.String())
		}
	})
	eventually(t, 60*time.Second, func() error {
		if cmd.ProcessState != nil {
			return fmt.Errorf("the service exited: %v", cmd.ProcessState)
		}
		res, err := http.Get(s.base + "/health")
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	})
	return s
}

// kill stops the service with SIGKILL (no graceful anything).
func (s *edgeService) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// health returns /health's status and its checks.
func (s *edgeService) health() (int, map[string]any) {
	s.t.Helper()
	status, body := api{s.t, s.base}.do("GET", "/health", "", nil)
	checks, _ := body["checks"].(map[string]any)
	return status, checks
}

// ingest posts items with the given ids and returns the status, the
// Retry-After header and the body.
func (s *edgeService) ingest(key string, ids []string) (int, string, map[string]any) {
	s.t.Helper()
	items := make([]map[string]any, len(ids))
	now := time.Now().UTC()
	for i, id := range ids {
		items[i] = map[string]any{"id": id, "timestamp": now.Format(time.RFC3339Nano), "session_id": "edge",
			"method": "tools/call", "name": "probe", "status": "ok", "duration_ms": 3}
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	req, _ := http.NewRequest("POST", s.base+"/v1/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, res.Header.Get("Retry-After"), m
}

func idRange(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return ids
}

// storedIDs counts the stored rows of each item id of an MCP.
func storedIDs(addr, database, mcpID string) (map[string]int, error) {
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query(context.Background(),
		fmt.Sprintf("SELECT %s AS item_id, count() FROM %s.events WHERE mcp_id = ? GROUP BY item_id", clickhouse.EventID, database), mcpID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var id string
		var n uint64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		got[id] = int(n)
	}
	return got, rows.Err()
}

// waitStoredOnce waits until exactly the ids are stored, each once.
func waitStoredOnce(t *testing.T, addr, database, mcpID string, ids []string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		got, err := storedIDs(addr, database, mcpID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if got[id] != 1 {
				return fmt.Errorf("item %s stored %d times, want once", id, got[id])
			}
		}
		if len(got) != len(ids) {
			return fmt.Errorf("%d distinct ids stored, want %d", len(got), len(ids))
		}
		return nil
	})
}

// TestStartDuringClickHouseOutage: with ClickHouse stopped, the service
// starts, /health says degraded with clickhouse unavailable, ingest answers
// 202 and reads 503; a batch stored before the restart and retried during
// the outage is not stored twice; once ClickHouse is back, everything
// acknowledged is stored exactly once and reads answer again.
func TestStartDuringClickHouseOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	own := testenv.OwnClickHouse(t)
	cfg := testConfig(t, own.Addr)
	bin := buildBinary(t)
	port := testenv.FreePort(t)

	svc := startEdge(t, bin, cfg, port)
	a := api{t, svc.base}
	token, mcpID, key := a.newTenant("outage")
	before := idRange("before", 40)
	if status, _, body := svc.ingest(key, before); status != 202 {
		t.Fatalf("ingest before the outage: %d %v", status, body)
	}
	waitStoredOnce(t, own.Addr, cfg.ClickHouse.Database, mcpID, before)
	svc.kill()
	own.Stop(t)

	svc = startEdge(t, bin, cfg, port)
	status, checks := svc.health()
	if status != 503 || checks["clickhouse"] != "unavailable" || checks["postgres"] != "ok" || checks["wal"] != "ok" {
		t.Fatalf("health during the outage: %d %v", status, checks)
	}
	during := idRange("during", 30)
	if status, _, body := svc.ingest(key, during); status != 202 || body["accepted"] != float64(30) {
		t.Fatalf("ingest during the outage: %d %v", status, body)
	}
	// The client retries the batch it sent before the restart: the filter
	// cannot know yet that ClickHouse holds it, so it is accepted now and
	// left out at flush.
	if status, _, body := svc.ingest(key, before); status != 202 {
		t.Fatalf("retry during the outage: %d %v", status, body)
	}
	// The same batch again: now the filter knows it.
	if status, _, body := svc.ingest(key, during); status != 202 || body["accepted"] != float64(0) {
		t.Fatalf("repeat during the outage: %d %v", status, body)
	}
	day := time.Now().UTC().Format("2006-01-02")
	overview := "/v1/mcps/" + mcpID + "/overview?from=" + day + "&to=" + day
	if status, body := a.do("GET", overview, token, nil); status != 503 || body["code"] != "unavailable" {
		t.Fatalf("read during the outage: %d %v", status, body)
	}

	own.Start(t)
	all := append(append([]string{}, before...), during...)
	waitStoredOnce(t, own.Addr, cfg.ClickHouse.Database, mcpID, all)
	eventually(t, 30*time.Second, func() error {
		status, body := a.do("GET", overview, token, nil)
		if status != 200 {
			return fmt.Errorf("overview: %d %v", status, body)
		}
		if calls := body["calls"]; calls != float64(len(all)) {
			return fmt.Errorf("overview calls %v, want %d", calls, len(all))
		}
		return nil
	})
	if status, checks := svc.health(); status != 200 {
		t.Fatalf("health after the outage: %d %v", status, checks)
	}
	// Later retries of either batch are dropped as usual.
	for _, ids := range [][]string{before, during} {
		if status, _, body := svc.ingest(key, ids); status != 202 || body["accepted"] != float64(0) {
			t.Fatalf("retry after the outage: %d %v", status, body)
		}
	}
	time.Sleep(time.Second) // a flush interval or five: nothing more may arrive
	waitStoredOnce(t, own.Addr, cfg.ClickHouse.Database, mcpID, all)
}

// TestLogWriteFailureIsTemporary: the write-ahead log's directory on a
// small tmpfs is filled up. Ingest answers 503 unavailable with
// Retry-After and /health names the log, the process stays up (a failed
// checkpoint write included); once space is freed, ingest answers 202 and
// /health ok again, and every acknowledged item is stored once.
func TestLogWriteFailureIsTemporary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("needs to mount a small tmpfs (root) to fill a disk: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Ingest.WALDir = filepath.Join(mnt, "wal")
	bin := buildBinary(t)
	svc := startEdge(t, bin, cfg, testenv.FreePort(t), "TELEMETRY_INGEST_WAL_SEGMENT_BYTES=1048576")
	a := api{t, svc.base}
	_, mcpID, key := a.newTenant("diskfull")
	first := idRange("first", 50)
	if status, _, body := svc.ingest(key, first); status != 202 {
		t.Fatalf("ingest: %d %v", status, body)
	}

	// Fill the disk.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(f, io.LimitReader(zeros{}, 16<<20)) // stops at ENOSPC
	f.Close()

	refused := 0
	for i := range 20 {
		status, retryAfter, body := svc.ingest(key, idRange(fmt.Sprintf("full%d", i), 200))
		switch status {
		case 202: // fitted in what was left of a block
		case 503:
			if body["code"] != "unavailable" || retryAfter == "" {
				t.Fatalf("ingest on a full disk: %d (Retry-After %q) %v", status, retryAfter, body)
			}
			refused++
		default:
			t.Fatalf("ingest on a full disk: %d %v", status, body)
		}
		if refused > 0 {
			break
		}
	}
	if refused == 0 {
		t.Fatal("ingest kept answering 202 on a full disk")
	}
	if status, checks := svc.health(); status != 503 || checks["wal"] != "unavailable" {
		t.Fatalf("health on a full disk: %d %v", status, checks)
	}
	time.Sleep(time.Second) // flushes and checkpoint writes fail meanwhile
	if svc.cmd.ProcessState != nil {
		t.Fatalf("the service exited on a full disk: %v", svc.cmd.ProcessState)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	second := idRange("second", 50)
	if status, _, body := svc.ingest(key, second); status != 202 || body["accepted"] != float64(50) {
		t.Fatalf("ingest after space was freed: %d %v", status, body)
	}
	if status, checks := svc.health(); status != 200 {
		t.Fatalf("health after space was freed: %d %v", status, checks)
	}
	got := map[string]int{}
	eventually(t, 30*time.Second, func() error {
		var err error
		if got, err = storedIDs(testenv.ClickHouseAddr(t), cfg.ClickHouse.Database, mcpID); err != nil {
			return err
		}
		for _, id := range append(append([]string{}, first...), second...) {
			if got[id] != 1 {
				return fmt.Errorf("item %s stored %d times, want once", id, got[id])
			}
		}
		return nil
	})
	for id, n := range got {
		if n != 1 {
			t.Errorf("item %s stored %d times", id, n)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestResetLogDirectory: an operator deletes the log directory (what one
// does after a corruption stop), so sequence numbers start again at 1; a
// record of the new log replayed after SIGKILL must not be mistaken for the
// old log's record of the same number, which ClickHouse already holds.
func TestResetLogDirectory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	bin := buildBinary(t)
	port := testenv.FreePort(t)
	svc := startEdge(t, bin, cfg, port)
	_, mcpID, key := api{t, svc.base}.newTenant("reset")
	old := idRange("old", 20)
	if status, _, body := svc.ingest(key, old); status != 202 {
		t.Fatalf("ingest: %d %v", status, body)
	}
	waitStoredOnce(t, testenv.ClickHouseAddr(t), cfg.ClickHouse.Database, mcpID, old)
	svc.kill()
	if err := os.RemoveAll(cfg.Ingest.WALDir); err != nil {
		t.Fatal(err)
	}

	// The new log's first record stays in the log (no flush for 4 s)
	// until SIGKILL; the next start replays it and checks ClickHouse for
	// records of the same key.
	svc = startEdge(t, bin, cfg, port, "TELEMETRY_INGEST_FLUSH_INTERVAL=4s")
	fresh := idRange("fresh", 20)
	if status, _, body := svc.ingest(key, fresh); status != 202 {
		t.Fatalf("ingest after the reset: %d %v", status, body)
	}
	svc.kill()
	svc = startEdge(t, bin, cfg, port)
	waitStoredOnce(t, testenv.ClickHouseAddr(t), cfg.ClickHouse.Database, mcpID, append(old, fresh...))
	if strings.Contains(svc.logs.String(), "already in ClickHouse") {
		t.Errorf("the replay took a new record for an old one:\n%s", svc.logs.String())
	}
}

// TestDamagedLogRecordKeepsLaterOnes: three payloads wait in the log when
// the service is killed; a byte of the middle one is flipped on disk.
// `telemetryd wal verify` reports it (exit 1) without repairing; the next
// start keeps the first and third payloads (stored once each), reports the
// middle one lost in /metrics, and verify finds nothing more.
func TestDamagedLogRecordKeepsLaterOnes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	bin := buildBinary(t)
	port := testenv.FreePort(t)
	svc := startEdge(t, bin, cfg, port, "TELEMETRY_INGEST_FLUSH_INTERVAL=4s")
	_, mcpID, key := api{t, svc.base}.newTenant("damaged")
	batches := [][]string{idRange("one", 10), idRange("two", 10), idRange("three", 10)}
	for _, ids := range batches {
		if status, _, body := svc.ingest(key, ids); status != 202 {
			t.Fatalf("ingest: %d %v", status, body)
		}
	}
	svc.kill()

	segs, _ := filepath.Glob(filepath.Join(cfg.Ingest.WALDir, "*.wal"))
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Frames: 24-byte header (length at bytes 4..8), then the payload.
	frameLen := func(off int) int {
		return 24 + int(uint32(data[off+4])|uint32(data[off+5])<<8|uint32(data[off+6])<<16|uint32(data[off+7])<<24)
	}
	second := frameLen(0)
	if second+frameLen(second)+frameLen(second+frameLen(second)) != len(data) {
		t.Fatalf("the segment does not hold exactly three records (%d bytes)", len(data))
	}
	data[second+24+7] ^= 0x20
	if err := os.WriteFile(segs[0], data, 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(bin, "wal", "verify", "--dir", cfg.Ingest.WALDir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "records 2..2 lost") || !strings.Contains(string(out), "1 valid records after it kept") {
		t.Fatalf("wal verify on a damaged log: %v\n%s", err, out)
	}

	svc = startEdge(t, bin, cfg, port)
	waitStoredOnce(t, testenv.ClickHouseAddr(t), cfg.ClickHouse.Database, mcpID, append(append([]string{}, batches[0]...), batches[2]...))
	res, err := http.Get(svc.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(raw), "telemetry_wal_lost_records_total 1") {
		t.Errorf("/metrics does not count the lost record:\n%s", grepLines(string(raw), "telemetry_wal"))
	}
	if out, err := exec.Command(bin, "wal", "verify", "--dir", cfg.Ingest.WALDir).CombinedOutput(); err != nil || !strings.Contains(string(out), "no damage found") {
		t.Fatalf("wal verify after the repair: %v\n%s", err, out)
	}
}

func grepLines(s, substr string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestViewFailingForOneInsert: a rollup view fails while the flusher's
// insert runs (a column its target does not fill), so the insert stores
// the raw rows and every other rollup, then fails. Once the view works
// again, the retry finds the rows stored, leaves them out, and completes
// the one rollup that lacks them from the insert's marker: the tool read
// (tool_daily) and the overview (mcp_daily) count every item once.
func TestViewFailingForOneInsert(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	chAddr := testenv.ClickHouseAddr(t)
	cfg := testConfig(t, chAddr)
	bin := buildBinary(t)
	svc := startEdge(t, bin, cfg, testenv.FreePort(t))
	token, mcpID, key := api{t, svc.base}.newTenant("view-fails")
	first := idRange("first", 20)
	if status, _, body := svc.ingest(key, first); status != 202 {
		t.Fatalf("ingest: %d %v", status, body)
	}
	waitStoredOnce(t, chAddr, cfg.ClickHouse.Database, mcpID, first)

	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	db := cfg.ClickHouse.Database
	if err := conn.Exec(ctx, "ALTER TABLE "+db+".tool_daily ADD COLUMN boom UInt8 DEFAULT throwIf(mcp_id != '')"); err != nil {
		t.Fatal(err)
	}
	second := idRange("second", 20)
	if status, _, body := svc.ingest(key, second); status != 202 {
		t.Fatalf("ingest: %d %v", status, body)
	}
	// The raw rows are in; the insert failed at tool_daily's view.
	waitStoredOnce(t, chAddr, db, mcpID, append(first, second...))
	eventually(t, 20*time.Second, func() error {
		if !strings.Contains(svc.logs.String(), "while pushing to view") {
			return fmt.Errorf("the insert has not failed at the view yet")
		}
		return nil
	})
	var short uint64
	if err := conn.QueryRow(ctx, "SELECT countMerge(calls) FROM "+db+".tool_daily WHERE mcp_id = ?", mcpID).Scan(&short); err != nil || short != 20 {
		t.Fatalf("tool_daily counts %d calls (%v) while its view fails; want the first 20", short, err)
	}
	if err := conn.Exec(ctx, "ALTER TABLE "+db+".tool_daily DROP COLUMN boom"); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	a := api{t, svc.base}
	eventually(t, 30*time.Second, func() error {
		tools := a.must(200, "GET", "/v1/mcps/"+mcpID+"/tools?from="+today+"&to="+today, token, nil)
		items, _ := tools["items"].([]any)
		if len(items) != 1 {
			return fmt.Errorf("tools: %v", tools)
		}
		if calls := items[0].(map[string]any)["calls"]; calls != float64(40) {
			return fmt.Errorf("the tool read counts %v calls, want 40", calls)
		}
		return nil
	})
	if o := a.must(200, "GET", "/v1/mcps/"+mcpID+"/overview?from="+today+"&to="+today, token, nil); o["calls"] != float64(40) {
		t.Errorf("the overview counts %v calls, want 40", o["calls"])
	}
	waitStoredOnce(t, chAddr, db, mcpID, append(first, second...))
	// The flusher completes the rollups the failed insert left out (the
	// views run in parallel: the failing one may stop others), then acks.
	eventually(t, 30*time.Second, func() error {
		if n := scrape(t, svc.base+"/metrics")["telemetry_flush_views_completed_total"]; n < 1 {
			return fmt.Errorf("telemetry_flush_views_completed_total = %v, want at least 1 (tool_daily)", n)
		}
		if strings.Contains(svc.logs.String(), "the rollups were completed") {
			return nil
		}
		return fmt.Errorf("the completion was not logged")
	})
	// Every rollup counts each item once: none short, none twice.
	for _, r := range []string{"countMerge(calls) FROM mcp_daily", "countMerge(calls) FROM tool_daily", "countMerge(calls) FROM session_daily",
		"countMerge(calls) FROM client_daily", "toUInt64(sum(calls)) FROM tool_client_daily", "toUInt64(sum(calls)) FROM user_daily",
		"toUInt64(sum(events)) FROM usage_daily", "countMerge(calls) FROM tool_monthly", "countMerge(calls) FROM client_monthly",
		"countMerge(calls) FROM mcp_hourly", "countMerge(calls) FROM tool_hourly", "countMerge(calls) FROM breakdown_daily WHERE dim = 'tool' AND",
		"toUInt64(sum(calls)) FROM slo_hourly", "toUInt64(sum(calls)) FROM slo_daily"} {
		sel, table, _ := strings.Cut(r, " FROM ")
		where := " WHERE mcp_id = ?"
		if strings.HasSuffix(table, " AND") {
			where = " " + strings.TrimSuffix(table[strings.Index(table, " "):], "AND") + "AND mcp_id = ?"
			table = table[:strings.Index(table, " ")]
		}
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT "+sel+" FROM "+db+"."+table+where, mcpID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 40 {
			t.Errorf("%s counts %d items, want 40", table, n)
		}
	}
}
