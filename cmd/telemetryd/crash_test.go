package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// service is the real telemetryd binary run as a child process.
type service struct {
	cmd  *exec.Cmd
	base string
}

// The binary is built once for the package's tests (buildBinary) and
// removed by TestMain.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "telemetryd-bin-"); binErr != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "telemetryd"), ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "telemetryd")
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// startBinary runs the binary on cfg's servers, the environment's extra
// settings ("TELEMETRY_X=v") overriding the defaults below, and waits
// until it is healthy.
func startBinary(t *testing.T, bin string, cfg Config, port int, extra ...string) *service {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "serve")
	cmd.Dir = t.TempDir() // no configs/ here: defaults plus the environment
	cmd.Env = append(os.Environ(),
		"TELEMETRY_SERVER_ADDR="+addr,
		"TELEMETRY_CLICKHOUSE_ADDR="+cfg.ClickHouse.Addr[0],
		"TELEMETRY_CLICKHOUSE_DATABASE="+cfg.ClickHouse.Database,
		"TELEMETRY_POSTGRES_URL="+cfg.Postgres.URL,
		"TELEMETRY_INGEST_WAL_DIR="+cfg.Ingest.WALDir,
		"TELEMETRY_INGEST_RATE_LIMIT_PER_MINUTE=1000000",
		"TELEMETRY_INGEST_NODE_ID=crash-test",
		"TELEMETRY_ALERTING_SECRET_KEY_FILE="+cfg.Alerting.SecretKeyFile,
		"TELEMETRY_NIGHTLY_ENABLED=false",
		"TELEMETRY_LOG_LEVEL=warn",
	)
	cmd.Env = append(cmd.Env, extra...) // the last of a name wins
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: cmd, base: "http://" + addr}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	eventually(t, 60*time.Second, func() error {
		res, err := http.Get(s.base + "/health")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("health %d", res.StatusCode)
		}
		return nil
	})
	return s
}

// TestCrashLosesNothingAcknowledged loads the real binary with concurrent
// ingest, kills it with SIGKILL mid-stream, restarts it on the same
// write-ahead log and checks that every item that got a 202 is readable
// exactly once.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	bin := buildBinary(t)
	port := testenv.FreePort(t)
	svc := startBinary(t, bin, cfg, port)
	a := api{t, svc.base}
	_, mcp, key := a.newTenant("crash")

	var (
		mu      sync.Mutex
		acked   = map[string]bool{}
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		batches int
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				ids := make([]string, 50)
				items := make([]map[string]any, 50)
				for i := range items {
					ids[i] = fmt.Sprintf("w%d-b%d-i%d", w, n, i)
					items[i] = map[string]any{"id": ids[i], "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
						"session_id": fmt.Sprintf("s%d", w), "method": "tools/call", "name": "t", "duration_ms": 1}
				}
				body, _ := json.Marshal(map[string]any{"items": items})
				req, _ := http.NewRequest("POST", svc.base+"/v1/ingest", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := client.Do(req)
				if err != nil {
					return // the service died under us: this batch was not acknowledged
				}
				res.Body.Close()
				if res.StatusCode == 202 {
					mu.Lock()
					for _, id := range ids {
						acked[id] = true
					}
					batches++
					mu.Unlock()
				}
			}
		}(w)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := svc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = svc.cmd.Wait()
	close(stop)
	wg.Wait()
	if batches < 10 {
		t.Fatalf("only %d batches acknowledged before the kill; the test needs load", batches)
	}
	t.Logf("%d batches (%d items) acknowledged before SIGKILL", batches, len(acked))

	startBinary(t, bin, cfg, port)
	eventually(t, 30*time.Second, func() error {
		got := storedPerID(t, cfg, mcp, "")
		missing := 0
		for id := range acked {
			if got[id] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d acknowledged items not readable after the restart", missing)
		}
		for id, n := range got {
			if n != 1 {
				return fmt.Errorf("item %s stored %d times", id, n)
			}
		}
		return nil
	})
}
