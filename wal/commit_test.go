package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

func TestConcurrentAppends(t *testing.T) {
	const goroutines, perG = 50, 20
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 16 << 10})

	type result struct {
		seq  uint64
		data []byte
	}
	results := make(chan result, goroutines*perG)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				data := fmt.Appendf(nil, "goroutine %d record %d", g, i)
				first, last, err := l.Append(context.Background(), data)
				if err != nil || first != last {
					t.Errorf("Append = %d..%d, %v", first, last, err)
					return
				}
				results <- result{first, data}
			}
		})
	}
	wg.Wait()
	close(results)

	want := map[uint64][]byte{}
	for r := range results {
		if _, dup := want[r.seq]; dup {
			t.Fatalf("seq %d returned twice", r.seq)
		}
		want[r.seq] = r.data
	}
	recs := readAll(t, l, 0)
	if len(recs) != goroutines*perG || len(want) != goroutines*perG {
		t.Fatalf("read %d records, %d distinct seqs; want %d", len(recs), len(want), goroutines*perG)
	}
	for _, r := range recs {
		if !bytes.Equal(r.Data, want[r.Seq]) {
			t.Fatalf("seq %d holds %q, Append was given %q", r.Seq, r.Data, want[r.Seq])
		}
	}
	if syncs := l.Stats().Syncs; syncs >= goroutines*perG {
		t.Fatalf("%d fsyncs for %d appends: no group commit", syncs, goroutines*perG)
	} else {
		t.Logf("%d appends, %d fsyncs", goroutines*perG, syncs)
	}
}

// TestGroupCommit holds the first fsync until 49 more appends are queued
// and checks that they all share the second one.
func TestGroupCommit(t *testing.T) {
	const callers = 50
	l := openLog(t, t.TempDir(), Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	l.sync = func(f *os.File) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return f.Sync()
	}

	seqs := make(chan uint64, callers)
	appendOne := func() {
		first, _, err := l.Append(context.Background(), []byte("x"))
		if err != nil {
			t.Error(err)
		}
		seqs <- first
	}
	var wg sync.WaitGroup
	wg.Go(appendOne)
	<-entered
	for range callers - 1 {
		wg.Go(appendOne)
	}
	for queued := 0; queued < callers-1; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		queued = len(l.pending)
		l.mu.Unlock()
	}
	close(release)
	wg.Wait()
	close(seqs)

	seen := map[uint64]bool{}
	for s := range seqs {
		if s < 1 || s > callers || seen[s] {
			t.Fatalf("bad or repeated seq %d", s)
		}
		seen[s] = true
	}
	if syncs := l.Stats().Syncs; syncs != 2 {
		t.Fatalf("%d fsyncs for %d appends, want 2", syncs, callers)
	}
}

// TestWriteFailureIsNotSticky: a failed fsync refuses the appends of its
// round with ErrWrite and cuts their frames off the file; once the disk
// works again appends succeed, numbered right after the last durable record,
// and a reopened log holds exactly the records that were acknowledged.
func TestWriteFailureIsNotSticky(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	appendN(t, l, 1, 2)
	l.sync = func(*os.File) error { return fmt.Errorf("disk on fire") }
	for _, rec := range []string{"lost", "lost again"} {
		if _, _, err := l.Append(context.Background(), []byte(rec)); !errors.Is(err, ErrWrite) {
			t.Fatalf("Append while fsync fails: %v, want ErrWrite", err)
		}
	}
	if err := l.Health(); !errors.Is(err, ErrWrite) {
		t.Fatalf("Health after a failed write = %v", err)
	}
	if st := l.Stats(); st.WriteFailures != 2 || st.UnackedRecords != 2 {
		t.Fatalf("Stats after failures = %+v", st)
	}
	l.sync = (*os.File).Sync
	first, last, err := l.Append(context.Background(), payload(3))
	if err != nil || first != 3 || last != 3 {
		t.Fatalf("Append after the disk recovered = %d..%d, %v; want 3..3", first, last, err)
	}
	if err := l.Health(); err != nil {
		t.Fatalf("Health after a good write = %v", err)
	}
	checkRecords(t, readAll(t, l, 0), 1, 3, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{})
	checkRecords(t, readAll(t, l, 0), 1, 3, 0)
}

// TestFlusherKeepsUp runs appenders against a flusher that reads and acks
// as it goes, across many small segments: the flusher must see every
// record exactly once, in order, and the acknowledged segments must go.
func TestFlusherKeepsUp(t *testing.T) {
	const appenders, perA = 8, 200
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentBytes: 4 << 10, MaxBytes: 64 << 10})
	ctx := context.Background()

	var wg sync.WaitGroup
	for a := range appenders {
		wg.Go(func() {
			for i := range perA {
				for {
					_, _, err := l.Append(ctx, fmt.Appendf(nil, "appender %d record %d", a, i))
					if err == nil {
						break
					}
					if !errors.Is(err, ErrFull) {
						t.Error(err)
						return
					}
					time.Sleep(time.Millisecond) // the flusher frees space
				}
			}
		})
	}

	var after uint64
	for after < appenders*perA {
		recs, err := l.Read(ctx, after, 2<<10, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Seq != after+1 {
				t.Fatalf("read seq %d after %d", r.Seq, after)
			}
			after = r.Seq
		}
		if len(recs) > 0 {
			if err := l.Ack(after); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	if st := l.Stats(); st.UnackedRecords != 0 || st.Segments != 1 || len(segmentFiles(t, dir)) != 1 {
		t.Fatalf("after acking everything: %+v, files %v", st, segmentFiles(t, dir))
	}
}

// TestSyncTimeCountsEachFsync: every data fsync is counted in the bucket of
// its duration, and their total is the sum of the durations.
func TestSyncTimeCountsEachFsync(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	l.sync = func(f *os.File) error {
		time.Sleep(30 * time.Millisecond) // a disk the flusher's neighbours keep busy
		return f.Sync()
	}
	appendN(t, l, 1, 3) // one at a time: three commit rounds
	st := l.Stats()
	var counted int64
	for i, n := range st.SyncTime.Buckets {
		counted += n
		if n > 0 && SyncBounds[i] < 0.03 {
			t.Errorf("%d fsyncs of 30 ms or more counted at most %v s", n, SyncBounds[i])
		}
	}
	if counted+st.SyncTime.Over != st.Syncs || st.Syncs < 3 {
		t.Fatalf("%d fsyncs counted by duration (and %d over), Syncs %d, want 3 or more, each counted", counted, st.SyncTime.Over, st.Syncs)
	}
	if min := 0.03 * float64(st.Syncs); st.SyncTime.Seconds < min {
		t.Errorf("fsyncs took %.3f s in total, want at least %.3f", st.SyncTime.Seconds, min)
	}
}
