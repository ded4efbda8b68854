package wal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestDamagedFrameKeepsLaterRecords flips bytes inside a record of an
// older segment, of the newest segment and in a record's length field:
// Verify reports the damage without changing anything, Open keeps every
// valid record after it, marks the destroyed one lost (readable as Lost,
// counted in Stats), keeps the original file as .damaged, and the log
// takes appends again.
func TestDamagedFrameKeepsLaterRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segment func(names []string) string
		at      func(data []byte) int // offset of the byte to flip
	}{
		{"older segment, payload", func(n []string) string { return n[1] }, func(d []byte) int { return len(d) / 2 }},
		{"newest segment, payload", func(n []string) string { return n[len(n)-1] }, func(d []byte) int { return headerSize + 2 }},
		{"older segment, length field", func(n []string) string { return n[0] }, func(d []byte) int { return 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openLog(t, dir, Options{SegmentBytes: 512})
			appendN(t, l, 1, 40)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			names := segmentFiles(t, dir)
			if len(names) < 3 {
				t.Fatalf("want several segments, got %v", names)
			}
			path := filepath.Join(dir, tc.segment(names))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pos := tc.at(data)
			base, _ := parseSegmentName(filepath.Base(path))
			var damagedSeq uint64
			refs, _ := walkFrames(path, data, base, 0)
			for _, r := range refs {
				if int64(pos) >= r.off && int64(pos) < r.end {
					damagedSeq = r.h.seq
				}
			}
			if damagedSeq == 0 {
				t.Fatalf("offset %d is in no record of %s", pos, path)
			}
			data[pos] ^= 0x40
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			rep, err := Verify(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Damages) != 1 {
				t.Fatalf("Verify found %v, want one damage", rep.Damages)
			}
			if d := rep.Damages[0]; d.TornTail || d.FirstLost != damagedSeq || d.LastLost != damagedSeq || d.RecordsAft == 0 {
				t.Fatalf("Verify: %s; want record %d lost", d, damagedSeq)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("Verify changed the file")
			}

			l = openLog(t, dir, Options{SegmentBytes: 512})
			if st := l.Stats(); st.LostRecords != 1 {
				t.Fatalf("Stats.LostRecords = %d, want 1", st.LostRecords)
			}
			recs := readAll(t, l, 0)
			if len(recs) != 40 {
				t.Fatalf("read %d records after repair, want 40", len(recs))
			}
			for i, r := range recs {
				seq := uint64(i + 1)
				switch {
				case r.Seq != seq:
					t.Fatalf("record %d has seq %d", i, r.Seq)
				case seq == damagedSeq:
					if !r.Lost || len(r.Data) != 0 {
						t.Fatalf("damaged record %d read as %q (lost %v)", seq, r.Data, r.Lost)
					}
				case r.Lost || !bytes.Equal(r.Data, payload(int(seq))):
					t.Fatalf("record %d read as %q (lost %v)", seq, r.Data, r.Lost)
				}
			}
			if _, err := os.Stat(path + ".damaged"); err != nil {
				t.Fatalf("the damaged original is not kept: %v", err)
			}
			appendN(t, l, 41, 3)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err = Verify(dir)
			if err != nil || len(rep.Damages) != 0 || rep.Lost != 1 || rep.LastSeq != 43 {
				t.Fatalf("Verify after repair: %+v, %v", rep, err)
			}
			l = openLog(t, dir, Options{SegmentBytes: 512})
			if got := readAll(t, l, 0); len(got) != 43 {
				t.Fatalf("%d records after reopening, want 43", len(got))
			}
		})
	}
}

// TestTornTailStillCut: garbage after the newest record (a crash in
// mid-write) is cut, reported as a torn tail, and loses nothing.
func TestTornTailStillCut(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	appendN(t, l, 1, 5)
	l.Close()
	names := segmentFiles(t, dir)
	path := filepath.Join(dir, names[len(names)-1])
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("half a frame, torn by a crash"))
	f.Close()
	rep, err := Verify(dir)
	if err != nil || len(rep.Damages) != 1 || !rep.Damages[0].TornTail {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
	l = openLog(t, dir, Options{})
	checkRecords(t, readAll(t, l, 0), 1, 5, 0)
	if st := l.Stats(); st.LostRecords != 0 {
		t.Fatalf("a torn tail counted as lost records: %+v", st)
	}
}
