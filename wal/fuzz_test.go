package wal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
		for i, p := 0, 0; i < len(recs); i++ { // the kept records are the file's good prefix
			h, payload, err := decodeFrame(data[p:])
			if err != nil || h.seq != recs[i].Seq || !bytes.Equal(payload, recs[i].Data) {
				t.Fatalf("record %d does not match the file: %v", recs[i].Seq, err)
			}
			p += int(h.frameLen())
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
