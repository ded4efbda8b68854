package wal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// crashDirEnv, when set, makes TestCrash run as the child process that
// appends into that directory until it is killed.
const crashDirEnv = "WAL_CRASH_CHILD_DIR"

// crashPayload is the content of record i of call c of goroutine g in the
// crash child: recognisable, and of varied sizes so frames straddle pages
// and segments.
func crashPayload(g, c, i int) []byte {
	size := 50 + (c*7919+i*31+g*131)%3000
	b := fmt.Appendf(nil, "g%d c%d i%d ", g, c, i)
	for len(b) < size {
		b = append(b, byte('a'+(len(b)+g+c)%26))
	}
	return b
}

// TestCrash kills a process that appends in a loop (kill -9, several
// times) and checks after each kill that every record whose Append had
// returned is still there, with its content.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	confirmed := map[uint64][]byte{} // seq -> payload whose Append returned

	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := 0
		sc := bufio.NewScanner(stdout)
		for sc.Scan() { // until the pipe closes, so every line printed before the kill counts
			var first, last uint64
			var g, c int
			if _, err := fmt.Sscanf(sc.Text(), "ok %d %d %d %d", &first, &last, &g, &c); err != nil {
				continue
			}
			for s := first; s <= last; s++ {
				confirmed[s] = crashPayload(g, c, int(s-first))
			}
			if lines++; lines == 400 {
				cmd.Process.Kill() // SIGKILL: no deferred Close, no flush
			}
		}
		err = cmd.Wait()
		if lines < 400 {
			t.Fatalf("round %d: child stopped after %d appends: %v\n%s", round, lines, err, stderr.String())
		}

		l, err := Open(dir, Options{SegmentBytes: 64 << 10, Logger: quiet})
		if err != nil {
			t.Fatalf("round %d: Open after kill: %v", round, err)
		}
		acked := l.Acked()
		recs := readAll(t, l, 0)
		got := map[uint64][]byte{}
		for i, r := range recs {
			if want := acked + 1 + uint64(i); r.Seq != want {
				t.Fatalf("round %d: record %d has seq %d, want %d", round, i, r.Seq, want)
			}
			got[r.Seq] = r.Data
		}
		if n := len(recs); n > 0 && recs[n-1].Seq != l.LastSeq() {
			t.Fatalf("round %d: read up to %d, LastSeq %d", round, recs[n-1].Seq, l.LastSeq())
		}
		checked := 0
		for seq, want := range confirmed {
			if seq <= acked {
				continue
			}
			if !bytes.Equal(got[seq], want) {
				t.Fatalf("round %d: confirmed record %d lost or changed: got %.40q", round, seq, got[seq])
			}
			checked++
		}
		t.Logf("round %d: %d confirmed, acked %d, %d unacked on disk, %d confirmed ones checked", round, len(confirmed), acked, len(recs), checked)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// crashChild appends from several goroutines, printing each returned range,
// while a flusher reads and acknowledges with a lag, so that checkpoints
// and segment deletions are also under way when the kill comes.
func crashChild(dir string) {
	l, err := Open(dir, Options{SegmentBytes: 64 << 10, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	time.AfterFunc(time.Minute, func() { os.Exit(3) }) // never outlive a lost parent
	ctx := context.Background()
	var out sync.Mutex
	for g := range 8 {
		go func() {
			for c := 0; ; c++ {
				recs := make([][]byte, 1+c%3)
				for i := range recs {
					recs[i] = crashPayload(g, c, i)
				}
				first, last, err := l.Append(ctx, recs...)
				if errors.Is(err, ErrFull) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(2)
				}
				out.Lock()
				fmt.Fprintf(os.Stdout, "ok %d %d %d %d\n", first, last, g, c)
				out.Unlock()
			}
		}()
	}
	after := l.Acked()
	for {
		recs, err := l.Read(ctx, after, 32<<10, 100*time.Millisecond)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child read:", err)
			os.Exit(2)
		}
		if len(recs) == 0 {
			continue
		}
		after = recs[len(recs)-1].Seq
		if after > 100 {
			if err := l.Ack(after - 100); err != nil {
				fmt.Fprintln(os.Stderr, "child ack:", err)
				os.Exit(2)
			}
		}
	}
}
