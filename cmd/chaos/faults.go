package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The faults: their seeded schedule, the servers and instances they strike,
// and how each is applied and undone.

// httpOffset is the HTTP port of a replicated node: its TCP port + 20
// (dbctl.sh's CH_HTTP_OFFSET; the interserver port is + 10).
const httpOffset = 20

// fault is one entry of the schedule.
type fault struct {
	at, hold time.Duration
	kind     string // kill-a, kill-b, kill-clickhouse, kill-replica, kill-postgres, fill-disk
	node     int    // kill-replica: the ClickHouse node, 1 to 4
}

func (f fault) String() string {
	kind := f.kind
	if f.node > 0 {
		kind = fmt.Sprintf("%s %d", kind, f.node)
	}
	return fmt.Sprintf("at %5.1fs %-16s for %.1fs", f.at.Seconds(), kind, f.hold.Seconds())
}

// schedule draws the faults from the seed: one at a time, each held
// 1-8 s, 3-10 s apart, none in the last 15 s. With replicas (a
// replicated cluster of that many ClickHouse nodes), kill-replica, of a
// node drawn at random, takes kill-clickhouse's place.
func schedule(rng *rand.Rand, total time.Duration, disk bool, replicas int) []fault {
	kinds := []string{"kill-a", "kill-b", "kill-clickhouse", "kill-postgres"}
	if replicas > 0 {
		kinds[2] = "kill-replica"
	}
	if disk {
		kinds = append(kinds, "fill-disk")
	}
	var out []fault
	at := 5*time.Second + time.Duration(rng.IntN(5000))*time.Millisecond
	for at < total-15*time.Second {
		f := fault{at: at, kind: kinds[rng.IntN(len(kinds))]}
		if f.kind == "kill-replica" {
			f.node = 1 + rng.IntN(replicas)
		}
		switch f.kind {
		case "kill-a", "kill-b":
			f.hold = time.Duration(500+rng.IntN(2500)) * time.Millisecond
		default:
			f.hold = time.Duration(2000+rng.IntN(6000)) * time.Millisecond
		}
		out = append(out, f)
		at += f.hold + time.Duration(3000+rng.IntN(7000))*time.Millisecond
	}
	return out
}

func (h *harness) dbctl(args ...string) error {
	cmd := exec.Command(filepath.Join(h.repo, "scripts", "dbctl.sh"), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("dbctl %v: %v\n%s", args, err, out)
	}
	return nil
}

func (h *harness) dbDir() string { return filepath.Join(h.dir, "db") }

func (h *harness) startServers() error {
	if h.replicated {
		args := []string{"start-replicated", h.dbDir(), replicatedCluster, strconv.Itoa(h.zkPort), "2"}
		for _, p := range h.chPorts {
			args = append(args, strconv.Itoa(p))
		}
		cmd := exec.Command(filepath.Join(h.repo, "scripts", "dbctl.sh"), args...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("CH_HTTP_OFFSET=%d", httpOffset))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("dbctl %v: %v\n%s", args, err, out)
		}
	} else if err := h.dbctl("start-ch", h.dbDir(), strconv.Itoa(h.chPort), strconv.Itoa(h.chHTTP)); err != nil {
		return err
	}
	return h.dbctl("start-pg", h.dbDir(), strconv.Itoa(h.pgPort))
}

// replicatedCluster names the replicated topology's cluster.
const replicatedCluster = "telemetry_chaos"

// chEnv is the ClickHouse configuration of an instance: the one server,
// or every node of the replicated cluster (the pool fails over).
func (h *harness) chEnv() []string {
	if !h.replicated {
		return []string{fmt.Sprintf("TELEMETRY_CLICKHOUSE_ADDR=127.0.0.1:%d", h.chPort)}
	}
	var addrs []string
	for _, p := range h.chPorts {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return []string{"TELEMETRY_CLICKHOUSE_ADDR=" + strings.Join(addrs, ","),
		"TELEMETRY_CLICKHOUSE_CLUSTER=" + replicatedCluster, "TELEMETRY_CLICKHOUSE_REPLICATED=true"}
}

func (h *harness) stopAll() {
	for _, in := range h.instances {
		if in != nil {
			in.kill()
		}
	}
	_ = h.dbctl("stop", h.dbDir())
}

func (h *harness) pgURL() string {
	return fmt.Sprintf("postgres://telemetry@127.0.0.1:%d/telemetry?sslmode=disable", h.pgPort)
}

// inject applies one fault and undoes it after its hold.
func (h *harness) inject(f fault) error {
	switch f.kind {
	case "kill-a", "kill-b":
		in := h.instances[0]
		if f.kind == "kill-b" {
			in = h.instances[1]
		}
		in.kill()
		time.Sleep(f.hold)
		return in.start()
	case "kill-clickhouse":
		if err := h.dbctl("kill-ch", h.dbDir()); err != nil {
			return err
		}
		time.Sleep(f.hold)
		return h.dbctl("start-ch", h.dbDir(), strconv.Itoa(h.chPort), strconv.Itoa(h.chHTTP))
	case "kill-replica":
		node := filepath.Join(h.dbDir(), fmt.Sprintf("node%d", f.node))
		if err := h.dbctl("kill-ch", node); err != nil {
			return err
		}
		time.Sleep(f.hold)
		port := h.chPorts[f.node-1]
		return h.dbctl("start-ch", node, strconv.Itoa(port), strconv.Itoa(port+httpOffset))
	case "kill-postgres":
		if err := h.dbctl("kill-pg", h.dbDir()); err != nil {
			return err
		}
		time.Sleep(f.hold)
		return h.dbctl("start-pg", h.dbDir(), strconv.Itoa(h.pgPort))
	case "fill-disk":
		filler := filepath.Join(h.walFS, "filler")
		var st syscall.Statfs_t
		if err := syscall.Statfs(h.walFS, &st); err != nil {
			return err
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		if out, err := exec.Command("fallocate", "-l", strconv.FormatInt(free, 10), filler).CombinedOutput(); err != nil {
			// Not every filesystem takes fallocate: write it out.
			if out2, err2 := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M").CombinedOutput(); !bytes.Contains(out2, []byte("No space")) {
				return fmt.Errorf("fill %s: %v %s / %v %s", h.walFS, err, out, err2, out2)
			}
		}
		time.Sleep(f.hold)
		return os.Remove(filler)
	}
	return fmt.Errorf("unknown fault %q", f.kind)
}

// instance is one telemetryd process.
type instance struct {
	h          *harness
	name, port string
	wal        string
	mu         sync.Mutex
	cmd        *exec.Cmd
	starts     int
}

func (in *instance) base() string { return "http://127.0.0.1:" + in.port }

func (in *instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.starts++
	logPath := filepath.Join(in.h.dir, fmt.Sprintf("telemetryd-%s.%d.log", in.name, in.starts))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(in.h.bin, "serve")
	cmd.Dir = in.h.dir
	cmd.Env = append(os.Environ(),
		"TELEMETRY_SERVER_ADDR=127.0.0.1:"+in.port,
		"TELEMETRY_SERVER_BASE_URL="+in.base(),
		"TELEMETRY_CLICKHOUSE_DATABASE="+in.h.database,
		"TELEMETRY_POSTGRES_URL="+in.h.pgURL(),
		"TELEMETRY_INGEST_WAL_DIR="+in.wal,
		"TELEMETRY_INGEST_WAL_MAX_BYTES=33554432", "TELEMETRY_INGEST_WAL_SEGMENT_BYTES=4194304",
		"TELEMETRY_INGEST_NODE_ID=chaos-"+in.name,
		"TELEMETRY_INGEST_SHARED_DEDUP=true",
		"TELEMETRY_INGEST_FLUSH_INTERVAL=500ms",
		"TELEMETRY_INGEST_RATE_LIMIT_PER_MINUTE=1000000",
		"TELEMETRY_ALERTING_EVALUATE_INTERVAL=1s",
		"TELEMETRY_ALERTING_SECRET_KEY_FILE="+filepath.Join(in.h.dir, "secret.key"),
		"TELEMETRY_NIGHTLY_ENABLED=false",
		"TELEMETRY_LOG_LEVEL=info",
	)
	cmd.Env = append(cmd.Env, in.h.chEnv()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	go func() { _ = cmd.Wait(); logFile.Close() }()
	in.cmd = cmd
	logf("instance %s started (pid %d, log %s)", in.name, cmd.Process.Pid, logPath)
	return nil
}

func (in *instance) kill() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil && in.cmd.Process != nil {
		_ = in.cmd.Process.Signal(syscall.SIGKILL)
		for range 100 {
			if syscall.Kill(in.cmd.Process.Pid, 0) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		in.cmd = nil
	}
}
