package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// retriedLoad is ingest clients that retry each batch (same ids) until it
// is answered 202, recording every answer.
type retriedLoad struct {
	mu       sync.Mutex
	acked    map[string]bool
	statuses map[int]int
	during   int // 202s while the outage lasted
	outage   bool
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startRetriedLoad(base, key string, workers int) *retriedLoad {
	l := &retriedLoad{acked: map[string]bool{}, statuses: map[int]int{}, stop: make(chan struct{})}
	for w := range workers {
		l.wg.Go(func() {
			for n := 0; ; n++ {
				items := testItems(fmt.Sprintf("w%d-b%d", w, n), 25)
				for {
					select {
					case <-l.stop:
						return
					default:
					}
					status, _, err := tryIngest(base, key, items)
					l.mu.Lock()
					if err == nil {
						l.statuses[status]++
					}
					if status == 202 {
						for _, it := range items {
							l.acked[it["id"].(string)] = true
						}
						if l.outage {
							l.during++
						}
					}
					l.mu.Unlock()
					if status == 202 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				select { // a client's pace, not a flood: the machine is small
				case <-l.stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	return l
}

// PostgreSQL killed under retried ingest: ingest keeps answering 202 for
// the keys it knows, reads and account routes answer 503 (never 500), the
// evaluator and the deletion worker pause and resume, and once PostgreSQL
// is back everything works again without a restart; every acknowledged
// item is stored exactly once.
func TestPostgresOutageUnderLoad(t *testing.T) {
	// Parallel: its PostgreSQL and ClickHouse are its own, and the
	// deletion records its outcome once PostgreSQL is back.
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	own := testenv.OwnPostgres(t)
	// A ClickHouse of its own too: the deletion's mutations must end within
	// a bound, which a test server busy with other packages' merges and
	// mutations does not always give.
	cfg := ownServerConfig(t, testenv.OwnClickHouse(t).Addr)
	cfg.Postgres.URL = own.URL
	bin := buildBinary(t)
	svc := startBinary(t, bin, cfg, testenv.FreePort(t),
		"TELEMETRY_ALERTING_EVALUATE_INTERVAL=1s", "TELEMETRY_STORAGE_DELETION_POLL=1s")
	a := api{t, svc.base}
	token, mcp, key := a.newTenant("outage")
	gone := testItems("gone", 5)
	for _, it := range gone {
		it["user_id"] = "gone"
	}
	if status, res := postIngest(t, svc.base, key, gone, false); status != 202 || num(res["accepted"]) != 5 {
		t.Fatalf("ingest: %d %v", status, res)
	}

	load := startRetriedLoad(svc.base, key, 3)
	time.Sleep(time.Second)
	// A deletion requested just before the outage runs across it.
	deletion := a.must(202, "DELETE", "/v1/mcps/"+mcp+"/users/gone", token, nil)["id"].(string)
	before := scrape(t, svc.base+"/metrics")
	own.Kill(t)
	load.mu.Lock()
	load.outage = true
	load.mu.Unlock()
	killed := time.Now()

	probes := []struct{ method, path string }{
		{"GET", "/v1/account"}, {"GET", "/v1/mcps/" + mcp + "/overview"}, {"GET", "/v1/account/inbox"},
		{"GET", "/v1/mcps/" + mcp + "/rules"}, {"POST", "/v1/mcps"},
	}
	for time.Since(killed) < 10*time.Second {
		for _, p := range probes {
			var body any
			if p.method == "POST" {
				body = map[string]any{"name": "during"}
			}
			if status, res := a.do(p.method, p.path, token, body); status != 503 {
				t.Errorf("%s %s during the outage: %d %v, want 503", p.method, p.path, status, res)
			}
		}
		if status, res := a.do("POST", "/v1/auth/login", "", map[string]any{"email": "x@example.com", "password": "a long password"}); status != 503 {
			t.Errorf("login during the outage: %d %v, want 503", status, res)
		}
		time.Sleep(500 * time.Millisecond)
	}
	during := scrape(t, svc.base+"/metrics")
	own.Start(t)
	eventually(t, 30*time.Second, func() error {
		if status, _ := a.do("GET", "/v1/account", token, nil); status != 200 {
			return fmt.Errorf("account after the outage: %d", status)
		}
		return nil
	})

	// The evaluator paused (its passes failed, it did not stop) and
	// resumes: a rule created now fires.
	failed := `telemetry_alert_evaluator_runs_total{outcome="failed"}`
	if during[failed]-before[failed] < 1 {
		t.Errorf("evaluator passes failed during the outage: %v; want some (the evaluator kept trying)", during[failed]-before[failed])
	}
	rule := a.must(201, "POST", "/v1/mcps/"+mcp+"/rules", token, map[string]any{"name": "after", "metric": "calls",
		"comparator": ">", "threshold": 0, "window_minutes": 60, "channels": []string{"in_app"}})
	eventually(t, 30*time.Second, func() error {
		if r := a.must(200, "GET", "/v1/rules/"+rule["id"].(string), token, nil); r["state"] != "firing" {
			return fmt.Errorf("rule state %v after the outage", r["state"])
		}
		return nil
	})
	// The deletion worker resumes the request the outage interrupted
	// (its mutations are slow on a busy ClickHouse).
	eventually(t, 120*time.Second, func() error {
		if d := a.must(200, "GET", "/v1/account/deletions/"+deletion, token, nil); d["status"] != "done" {
			return fmt.Errorf("deletion %v after the outage", d["status"])
		}
		return nil
	})
	if left := storedPerID(t, cfg, mcp, "gone-"); len(left) != 0 {
		t.Errorf("the deleted person's items are still stored: %v", left)
	}

	close(load.stop)
	load.wg.Wait()
	if load.during == 0 {
		t.Error("no ingest was answered 202 during the outage")
	}
	for status, n := range load.statuses {
		if status != 202 && status != 503 {
			t.Errorf("ingest answered %d %d times", status, n)
		}
	}
	if svc.cmd.ProcessState != nil {
		t.Fatalf("the service exited: %v", svc.cmd.ProcessState)
	}
	settledWithin(t, svc.base+"/metrics", time.Minute)
	got := storedPerID(t, cfg, mcp, "w")
	for id := range load.acked {
		if got[id] != 1 {
			t.Errorf("acknowledged item %s stored %d times", id, got[id])
		}
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("item %s stored %d times", id, n)
		}
	}
	t.Logf("%s: %d items acknowledged (%d batches during the outage); answers %v", time.Since(killed), len(load.acked), load.during, load.statuses)
}
