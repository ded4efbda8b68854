package wal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// validSegment returns the bytes of a segment holding payloads, numbered
// from 1.
func validSegment(payloads ...[]byte) []byte {
	frames, _ := appendFrames(nil, payloads)
	for p, seq := 0, uint64(1); p < len(frames); seq++ {
		fl := int(parseHeader(frames[p:]).frameLen())
		sealFrame(frames[p:p+fl], seq, 1_700_000_000_000_000_000)
		p += fl
	}
	return frames
}

// FuzzDecodeFrame: the decoder must not panic on any input, and a frame it
// accepts must encode back to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(validSegment([]byte("hello")))
	f.Add(validSegment([]byte{}))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := decodeFrame(b)
		if err != nil {
			return
		}
		again, _ := appendFrames(nil, [][]byte{payload})
		sealFrame(again, h.seq, h.nanos)
		if !bytes.Equal(again, b[:h.frameLen()]) {
			t.Fatalf("frame %x re-encodes as %x", b[:h.frameLen()], again)
		}
	})
}

// FuzzOpen writes arbitrary bytes as the only segment and opens the log.
// Whatever the bytes, Open must repair the file (it is the last segment),
// every record it keeps must read back, appends must continue the numbering,
// and a second Open must find the repaired file clean.
func FuzzOpen(f *testing.F) {
	f.Add(validSegment([]byte("one"), []byte("two")))
	f.Add(append(validSegment([]byte("one")), 0, 0, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, Options{Logger: quiet})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		recs := readAll(t, l, 0)
		if uint64(len(recs)) != l.LastSeq() {
			t.Fatalf("read %d records, LastSeq %d", len(recs), l.LastSeq())
		}
		// Every kept record is numbered in order and is either a valid
		// frame of the file (the repair resynchronises after damage, so not
		// only the good prefix) or marked lost with no payload.
		frames := map[uint64][][]byte{}
		for p := 0; p < len(data); p++ {
			if h, payload, err := decodeFrame(data[p:]); err == nil {
				frames[h.seq] = append(frames[h.seq], payload)
			}
		}
		for i, r := range recs {
			inFile := slices.ContainsFunc(frames[r.Seq], func(p []byte) bool { return bytes.Equal(p, r.Data) })
			switch {
			case r.Seq != uint64(i)+1:
				t.Fatalf("record %d is numbered %d", i+1, r.Seq)
			case r.Lost && len(r.Data) != 0:
				t.Fatalf("lost record %d has %d bytes", r.Seq, len(r.Data))
			case !r.Lost && !inFile:
				t.Fatalf("record %d does not match a frame of the file", r.Seq)
			}
		}
		first, _, err := l.Append(context.Background(), []byte("next"))
		if err != nil || first != uint64(len(recs))+1 {
			t.Fatalf("Append = %d, %v; want %d", first, err, len(recs)+1)
		}
		l.Close()

		var logs syncBuffer
		l, err = Open(dir, Options{Logger: slogTo(&logs)})
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		defer l.Close()
		if logs.String() != "" || l.LastSeq() != first {
			t.Fatalf("second Open: LastSeq %d, want %d; log %q", l.LastSeq(), first, logs.String())
		}
	})
}
