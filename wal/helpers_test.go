package wal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
)

// quiet is a logger for tests that do not look at the log output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openLog opens dir and closes the log when the test ends.
func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// payload is the deterministic content of the i-th test record.
func payload(i int) []byte {
	return fmt.Appendf(nil, "record %d %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, i%97))
}

// appendN appends records payload(from) .. payload(from+n-1), one call each,
// and checks that they get consecutive sequence numbers.
func appendN(t testing.TB, l *Log, from, n int) (first, last uint64) {
	t.Helper()
	for i := from; i < from+n; i++ {
		f, la, err := l.Append(context.Background(), payload(i))
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		if f != la || (first != 0 && f != last+1) {
			t.Fatalf("Append(%d) = %d..%d after %d", i, f, la, last)
		}
		if first == 0 {
			first = f
		}
		last = la
	}
	return first, last
}

// readAll reads every record after afterSeq without waiting.
func readAll(t testing.TB, l *Log, afterSeq uint64) []Record {
	t.Helper()
	var all []Record
	for {
		recs, err := l.Read(context.Background(), afterSeq, 64<<10, 0)
		if err != nil {
			t.Fatalf("Read(%d): %v", afterSeq, err)
		}
		if len(recs) == 0 {
			return all
		}
		all = append(all, recs...)
		afterSeq = recs[len(recs)-1].Seq
	}
}

// checkRecords asserts that recs are exactly seqs from..to, where record seq
// holds payload(int(seq)+shift).
func checkRecords(t testing.TB, recs []Record, from, to uint64, shift int) {
	t.Helper()
	if want := int(to - from + 1); len(recs) != want {
		t.Fatalf("got %d records, want %d (seqs %d..%d)", len(recs), want, from, to)
	}
	for i, r := range recs {
		seq := from + uint64(i)
		if r.Seq != seq {
			t.Fatalf("record %d has seq %d, want %d", i, r.Seq, seq)
		}
		if want := payload(int(seq) + shift); !bytes.Equal(r.Data, want) {
			t.Fatalf("record %d holds %q, want %q", seq, r.Data, want)
		}
	}
}

// segmentFiles lists the segment file names in dir.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range matches {
		names = append(names, filepath.Base(m))
	}
	sort.Strings(names)
	return names
}

// lastSegmentPath is the path of the newest segment file in dir.
func lastSegmentPath(t testing.TB, dir string) string {
	t.Helper()
	names := segmentFiles(t, dir)
	if len(names) == 0 {
		t.Fatal("no segment files")
	}
	return filepath.Join(dir, names[len(names)-1])
}

// slogTo returns a logger writing text lines to w.
func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
