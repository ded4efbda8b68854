package wal

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAppendReadAck(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "var", "wal"), Options{})
	ctx := context.Background()

	appendN(t, l, 1, 3)
	first, last, err := l.Append(ctx, payload(4), payload(5), payload(6))
	if err != nil || first != 4 || last != 6 {
		t.Fatalf("Append of three = %d..%d, %v; want 4..6", first, last, err)
	}
	checkRecords(t, readAll(t, l, 0), 1, 6, 0)
	checkRecords(t, readAll(t, l, 3), 4, 6, 0)

	// A budget smaller than one record still returns that record.
	recs, err := l.Read(ctx, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, recs, 1, 1, 0)
	// A budget of exactly two frames returns two.
	two := int(framesSize([][]byte{payload(2), payload(3)}))
	recs, err = l.Read(ctx, 1, two, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, recs, 2, 3, 0)

	if err := l.Ack(4); err != nil {
		t.Fatal(err)
	}
	if got := l.Acked(); got != 4 {
		t.Fatalf("Acked() = %d, want 4", got)
	}
	// Acknowledged records are never returned, whatever afterSeq says.
	checkRecords(t, readAll(t, l, 0), 5, 6, 0)
	st := l.Stats()
	if want := framesSize([][]byte{payload(5), payload(6)}); st.UnackedBytes != want || st.UnackedRecords != 2 {
		t.Fatalf("Stats = %+v, want %d bytes in 2 records", st, want)
	}
	if st.OldestUnacked.IsZero() || time.Since(st.OldestUnacked) < 0 {
		t.Fatalf("OldestUnacked = %v", st.OldestUnacked)
	}

	if err := l.Ack(2); err != nil {
		t.Fatalf("Ack below Acked: %v", err)
	}
	if err := l.Ack(7); err == nil {
		t.Fatal("Ack past LastSeq succeeded")
	}
	if err := l.Ack(6); err != nil {
		t.Fatal(err)
	}
	st = l.Stats()
	if st.UnackedBytes != 0 || st.UnackedRecords != 0 || !st.OldestUnacked.IsZero() {
		t.Fatalf("Stats after acking everything = %+v", st)
	}
	if recs := readAll(t, l, 0); len(recs) != 0 {
		t.Fatalf("Read after acking everything returned %d records", len(recs))
	}
}

func TestEmptyAndLargeRecords(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentBytes: 4 << 10})
	big := bytes.Repeat([]byte("x"), 100<<10) // larger than a segment
	if _, _, err := l.Append(context.Background(), []byte{}, big, []byte("after")); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, l, 0)
	if len(recs) != 3 || len(recs[0].Data) != 0 || !bytes.Equal(recs[1].Data, big) || string(recs[2].Data) != "after" {
		t.Fatalf("got %d records", len(recs))
	}
	if _, _, err := l.Append(context.Background()); err == nil {
		t.Fatal("Append of no records succeeded")
	}
}

func TestRestartReplaysUnacked(t *testing.T) {
	for _, segBytes := range []int64{0, 512} { // one segment; many
		dir := t.TempDir()
		opts := Options{SegmentBytes: segBytes, Logger: quiet}
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 1, 30)
		if err := l.Ack(12); err != nil {
			t.Fatal(err)
		}
		before := l.Stats()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}

		l = openLog(t, dir, opts)
		if l.Acked() != 12 || l.LastSeq() != 30 {
			t.Fatalf("segments %d: after restart Acked %d LastSeq %d, want 12 and 30", segBytes, l.Acked(), l.LastSeq())
		}
		checkRecords(t, readAll(t, l, 0), 13, 30, 0)
		after := l.Stats()
		if after.UnackedBytes != before.UnackedBytes || after.UnackedRecords != 18 || !after.OldestUnacked.Equal(before.OldestUnacked) {
			t.Fatalf("segments %d: stats before %+v, after restart %+v", segBytes, before, after)
		}
		appendN(t, l, 31, 5) // checks they get 31..35
		checkRecords(t, readAll(t, l, 0), 13, 35, 0)
	}
}

func TestSeqsContinueWhenEverythingWasAcked(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 5)
	if err := l.Ack(5); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// Even with every segment gone, the checkpoint keeps numbers rising.
	for _, name := range segmentFiles(t, dir) {
		os.Remove(filepath.Join(dir, name))
	}
	l = openLog(t, dir, Options{})
	if l.LastSeq() != 5 || l.Acked() != 5 {
		t.Fatalf("LastSeq %d Acked %d, want 5 and 5", l.LastSeq(), l.Acked())
	}
	if first, _ := appendN(t, l, 6, 1); first != 6 {
		t.Fatalf("next seq %d, want 6", first)
	}
}

func TestTornTailIsRepaired(t *testing.T) {
	cases := []struct {
		name     string
		damage   func(data []byte) []byte
		wantLast uint64 // records 1..wantLast survive
	}{
		{"garbage appended", func(d []byte) []byte { return append(d, []byte("\x07garbage that is no frame at all")...) }, 10},
		{"zeros appended", func(d []byte) []byte { return append(d, make([]byte, 4096)...) }, 10},
		{"half a header", func(d []byte) []byte { return append(d, make([]byte, headerSize/2)...) }, 10},
		{"last record cut short", func(d []byte) []byte { return d[:len(d)-5] }, 9},
		{"last record's payload flipped", func(d []byte) []byte { d[len(d)-1] ^= 0xff; return d }, 9},
		{"header promising more than the file", func(d []byte) []byte {
			var h [headerSize]byte
			h[4] = 0xff
			return append(d, h[:]...)
		}, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 1, 10)
			l.Close()
			path := lastSegmentPath(t, dir)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(data), 0o600); err != nil {
				t.Fatal(err)
			}

			var logs syncBuffer
			l = openLog(t, dir, Options{Logger: slogTo(&logs)})
			if l.LastSeq() != tc.wantLast {
				t.Fatalf("LastSeq = %d, want %d", l.LastSeq(), tc.wantLast)
			}
			checkRecords(t, readAll(t, l, 0), 1, tc.wantLast, 0)
			if !strings.Contains(logs.String(), "torn tail") || !strings.Contains(logs.String(), filepath.Base(path)) {
				t.Fatalf("repair not logged with the file name: %q", logs.String())
			}
			var want int64
			for i := 1; i <= int(tc.wantLast); i++ {
				want += headerSize + int64(len(payload(i)))
			}
			if got := fileSize(t, path); got != want {
				t.Fatalf("segment is %d bytes after repair, want %d", got, want)
			}
			appendN(t, l, int(tc.wantLast)+1, 2)
			checkRecords(t, readAll(t, l, 0), 1, tc.wantLast+2, 0)
		})
	}
}

// TestCorruptionIsAnError: damage that frame-level repair cannot mend (a
// missing segment, a bad checkpoint) stops Open with ErrCorrupt naming the
// file; repairable damage is tested in repair_test.go.
func TestCorruptionIsAnError(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentBytes: 512, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 40)
	l.Close()
	names := segmentFiles(t, dir)
	if len(names) < 3 {
		t.Fatalf("want several segments, got %v", names)
	}

	t.Run("missing segment", func(t *testing.T) {
		path := filepath.Join(dir, names[1])
		data, _ := os.ReadFile(path)
		os.Remove(path)
		defer os.WriteFile(path, data, 0o600)

		_, err := Open(dir, Options{Logger: quiet})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), names[2]) {
			t.Fatalf("Open = %v, want ErrCorrupt naming %s", err, names[2])
		}
	})
	t.Run("checkpoint", func(t *testing.T) {
		path := filepath.Join(dir, checkpointName)
		os.WriteFile(path, []byte("WALC\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 0o600)
		defer os.Remove(path)

		_, err := Open(dir, Options{Logger: quiet})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), checkpointName) {
			t.Fatalf("Open = %v, want ErrCorrupt naming the checkpoint", err)
		}
	})
	// Undamaged again, the log opens with every record.
	l = openLog(t, dir, Options{SegmentBytes: 512})
	checkRecords(t, readAll(t, l, 0), 1, 40, 0)
}

func TestErrFullUntilAck(t *testing.T) {
	rec := bytes.Repeat([]byte("r"), 1000)
	frame := int64(headerSize + len(rec))
	l := openLog(t, t.TempDir(), Options{MaxBytes: 10 * frame, SegmentBytes: 3 * frame})
	ctx := context.Background()
	for i := range 10 {
		if _, _, err := l.Append(ctx, rec); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
	if _, _, err := l.Append(ctx, rec); !errors.Is(err, ErrFull) {
		t.Fatalf("Append over the budget = %v, want ErrFull", err)
	}
	if _, _, err := l.Append(ctx, bytes.Repeat(rec, 11)); err == nil || errors.Is(err, ErrFull) {
		t.Fatalf("Append of a record larger than MaxBytes = %v, want a permanent error", err)
	}
	if err := l.Ack(4); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, _, err := l.Append(ctx, rec); err != nil {
			t.Fatalf("Append %d after Ack: %v", i, err)
		}
	}
	if _, _, err := l.Append(ctx, rec); !errors.Is(err, ErrFull) {
		t.Fatalf("Append over the budget again = %v, want ErrFull", err)
	}
	if st := l.Stats(); st.UnackedBytes != 10*frame || st.UnackedRecords != 10 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestAckDeletesSegments(t *testing.T) {
	dir := t.TempDir()
	// Frames of 124 bytes, four to a segment.
	l := openLog(t, dir, Options{SegmentBytes: 4 * 124})
	rec := bytes.Repeat([]byte("s"), 100)
	for range 20 {
		if _, _, err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{segmentName(1), segmentName(5), segmentName(9), segmentName(13), segmentName(17)}
	if got := segmentFiles(t, dir); !equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	if err := l.Ack(10); err != nil {
		t.Fatal(err)
	}
	if got, want := segmentFiles(t, dir), want[2:]; !equal(got, want) {
		t.Fatalf("after Ack(10): segments %v, want %v", got, want)
	}
	if l.Stats().Segments != 3 {
		t.Fatalf("Stats().Segments = %d, want 3", l.Stats().Segments)
	}
	// The active segment stays even when all of it is acknowledged.
	if err := l.Ack(20); err != nil {
		t.Fatal(err)
	}
	if got, want := segmentFiles(t, dir), want[4:]; !equal(got, want) {
		t.Fatalf("after Ack(20): segments %v, want %v", got, want)
	}
	if _, _, err := l.Append(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if recs := readAll(t, l, 0); len(recs) != 1 || recs[0].Seq != 21 {
		t.Fatalf("after acking 20, read %v", recs)
	}
}

func TestReadAnyPosition(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 256 << 10}
	l := openLog(t, dir, opts)
	const n = 2000 // about 1 MiB with payload(i) of ~70 bytes, padded below
	ctx := context.Background()
	for i := 1; i <= n; i++ {
		if _, _, err := l.Append(ctx, append(payload(i), make([]byte, 400)...)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(l *Log) {
		t.Helper()
		rng := rand.New(rand.NewPCG(1, 2))
		for range 300 {
			after := l.Acked() + rng.Uint64N(n-l.Acked())
			recs, err := l.Read(ctx, after, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Seq != after+1 || !bytes.HasPrefix(recs[0].Data, payload(int(after+1))) {
				t.Fatalf("Read(%d) returned %d records, first seq %d", after, len(recs), recs[0].Seq)
			}
		}
	}
	check(l)
	if err := l.Ack(n / 3); err != nil { // through the index, not the cursor
		t.Fatal(err)
	}
	l.Close()
	l = openLog(t, dir, opts) // the index is rebuilt by the scan
	check(l)
	if st := l.Stats(); st.UnackedRecords != n-n/3 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestReadWaits(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	ctx := context.Background()

	start := time.Now()
	recs, err := l.Read(ctx, 0, 1<<20, 30*time.Millisecond)
	if err != nil || len(recs) != 0 {
		t.Fatalf("Read on an empty log = %v, %v", recs, err)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatal("Read returned before its wait was over")
	}

	got := make(chan []Record)
	go func() {
		recs, err := l.Read(ctx, 0, 1<<20, time.Hour)
		if err != nil {
			t.Error(err)
		}
		got <- recs
	}()
	appendN(t, l, 1, 1)
	checkRecords(t, <-got, 1, 1, 0)

	errc := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	go func() { _, err := l.Read(cctx, 1, 1<<20, time.Hour); errc <- err }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context = %v", err)
	}

	go func() { _, err := l.Read(ctx, 1, 1<<20, time.Hour); errc <- err }()
	l.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Read during Close = %v, want ErrClosed", err)
	}
}

func TestClose(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Logger: quiet}); err == nil {
		t.Fatal("a second Open of the same directory succeeded")
	}
	appendN(t, l, 1, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if _, _, err := l.Append(ctx, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if _, err := l.Read(ctx, 0, 100, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v", err)
	}
	if err := l.Ack(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ack after Close = %v", err)
	}
	l = openLog(t, dir, Options{}) // the lock is released
	checkRecords(t, readAll(t, l, 0), 1, 1, 0)
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
