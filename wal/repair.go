package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"
)

// Damage inside a segment (a flipped bit, an overwritten block) is repaired
// frame by frame: every valid record after the damaged bytes is kept, and
// the records the damage destroyed are replaced by "lost" frames that hold
// their sequence numbers, so the log stays a gapless sequence. A lost frame
// is a frame with an empty payload and the time lostNanos, which no append
// writes; Read returns it as a Record with Lost set. Only damage at the very
// end of the newest segment, with no valid record after it, is a torn write
// (a crash in mid-append) and is cut off, as before.
const lostNanos = -1

// maxResyncSeqGap bounds how far past the expected sequence number a frame
// found after damaged bytes may be numbered: a random byte run that happens
// to look like a header is rejected by it long before its CRC is computed.
const maxResyncSeqGap = 1 << 20

// frameRef is one valid frame found in a segment's bytes.
type frameRef struct {
	off   int64
	h     header
	valid bool // false for a run of damaged bytes standing for lost records
	end   int64
	lost  [2]uint64 // first and last lost sequence number when !valid (first > last: none)
}

// Damage describes one damaged run of bytes in a segment.
type Damage struct {
	File       string
	Offset     int64  // where the damaged bytes start
	Bytes      int64  // how many bytes are damaged
	FirstLost  uint64 // the sequence numbers of the records they held;
	LastLost   uint64 // FirstLost > LastLost when none was lost (garbage bytes)
	Reason     string
	TornTail   bool // at the end of the newest segment: a crash in mid-write, cut off
	RecordsAft int  // valid records found after the damage in this segment
}

func (d Damage) String() string {
	lost := "no record lost"
	if d.FirstLost <= d.LastLost {
		lost = fmt.Sprintf("records %d..%d lost", d.FirstLost, d.LastLost)
	}
	kind := "damaged"
	if d.TornTail {
		kind = "torn tail"
	}
	return fmt.Sprintf("%s: %s, %d bytes at offset %d (%s): %s; %d valid records after it kept",
		d.File, kind, d.Bytes, d.Offset, d.Reason, lost, d.RecordsAft)
}

// walkFrames splits a segment's bytes into valid frames and damaged runs.
// base is the segment's first sequence number; nextBase the following
// segment's (0 for the newest segment), which bounds the sequence numbers
// this one may hold and tells how many records a damaged end destroyed.
func walkFrames(path string, data []byte, base, nextBase uint64) (refs []frameRef, damages []Damage) {
	var off int64
	expect := base
	var prevNanos int64
	size := int64(len(data))
	for off < size {
		h, reason := frameAt(data, off, expect, nextBase, prevNanos, false)
		if reason == "" {
			refs = append(refs, frameRef{off: off, h: h, valid: true, end: off + h.frameLen()})
			expect = h.seq + 1
			if h.nanos != lostNanos {
				prevNanos = h.nanos
			}
			off += h.frameLen()
			continue
		}
		// Damaged bytes from off: look for the next valid frame.
		next := int64(-1)
		var nh header
		for p := off + 1; p+headerSize <= size; p++ {
			if h, r := frameAt(data, p, expect, nextBase, prevNanos, true); r == "" {
				next, nh = p, h
				break
			}
		}
		d := Damage{File: path, Offset: off, Reason: reason}
		ref := frameRef{off: off, lost: [2]uint64{expect, expect - 1}}
		if next < 0 {
			d.Bytes, ref.end = size-off, size
			if nextBase == 0 {
				d.TornTail = true
				d.FirstLost, d.LastLost = 1, 0
			} else {
				ref.lost[1] = nextBase - 1
			}
		} else {
			d.Bytes, ref.end = next-off, next
			ref.lost[1] = nh.seq - 1
		}
		if !d.TornTail {
			d.FirstLost, d.LastLost = ref.lost[0], ref.lost[1]
		}
		refs = append(refs, ref)
		damages = append(damages, d)
		if ref.lost[0] <= ref.lost[1] {
			expect = ref.lost[1] + 1
		}
		off = ref.end
	}
	// Count the valid records after each damage.
	for i := range damages {
		for _, r := range refs {
			if r.valid && r.off > damages[i].Offset {
				damages[i].RecordsAft++
			}
		}
	}
	return refs, damages
}

// frameAt checks the frame at off: it must hold the expected sequence number
// (or, when resyncing after damage, any later one below nextBase) and pass
// its CRC. It returns the reason it is not a valid frame, "" when it is.
func frameAt(data []byte, off int64, expect, nextBase uint64, prevNanos int64, resync bool) (header, string) {
	rest := data[off:]
	if len(rest) < headerSize {
		return header{}, fmt.Sprintf("truncated header (%d of %d bytes)", len(rest), headerSize)
	}
	h := parseHeader(rest)
	if resync {
		// Cheap plausibility first: most offsets fail here.
		if h.seq < expect || h.seq > expect+maxResyncSeqGap || (nextBase != 0 && h.seq >= nextBase) {
			return h, "no frame"
		}
		if h.nanos != lostNanos && prevNanos != 0 && (h.nanos < prevNanos-int64(24*time.Hour) || h.nanos > prevNanos+int64(365*24*time.Hour)) {
			return h, "no frame"
		}
	}
	if h.frameLen() > int64(len(rest)) {
		return h, fmt.Sprintf("truncated record: header announces %d payload bytes, %d present", h.length, len(rest)-headerSize)
	}
	if _, _, err := decodeFrame(rest); err != nil {
		return h, err.Error()
	}
	if !resync && h.seq != expect {
		return h, fmt.Sprintf("sequence number %d, want %d", h.seq, expect)
	}
	return h, ""
}

// lostFrame encodes the frame that stands for a lost record.
func lostFrame(dst []byte, seq uint64) []byte {
	var f [headerSize]byte
	binary.LittleEndian.PutUint64(f[8:16], seq)
	binary.LittleEndian.PutUint64(f[16:24], uint64(lostNanos&(1<<64-1)))
	binary.LittleEndian.PutUint32(f[0:4], crc32.Checksum(f[4:], castagnoli))
	return append(dst, f[:]...)
}

// repairSegment rewrites a damaged segment with its valid frames, and lost
// frames in place of the records the damage destroyed; a torn tail is left
// out. The original is kept beside it as NAME.damaged for inspection. It
// returns the damages it found (none when the file is sound).
func (l *Log) repairSegment(s *segment, nextBase uint64) ([]Damage, error) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	refs, damages := walkFrames(s.path, data, s.base, nextBase)
	if len(damages) == 0 {
		return nil, nil
	}
	out := make([]byte, 0, len(data))
	for _, r := range refs {
		switch {
		case r.valid:
			out = append(out, data[r.off:r.end]...)
		default:
			for seq := r.lost[0]; seq <= r.lost[1] && r.lost[0] <= r.lost[1]; seq++ {
				out = lostFrame(out, seq)
			}
		}
	}
	onlyTorn := len(damages) == 1 && damages[0].TornTail
	for _, d := range damages {
		if d.TornTail {
			l.log.Warn("wal: cutting torn tail of last segment", "file", s.path, "offset", d.Offset,
				"dropped_bytes", d.Bytes, "reason", d.Reason)
		} else {
			l.log.Error("wal: damaged records in the log; keeping every valid record after them", "damage", d.String())
		}
	}
	if onlyTorn {
		return damages, truncateFile(s.path, int64(len(out)))
	}
	tmp := s.path + ".repair"
	if err := writeFileSync(tmp, out); err != nil {
		return nil, fmt.Errorf("wal: repair %s: %w", s.path, err)
	}
	kept := s.path + ".damaged"
	_ = os.Remove(kept)
	if err := os.Link(s.path, kept); err != nil {
		return nil, fmt.Errorf("wal: repair %s: %w", s.path, err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return nil, fmt.Errorf("wal: repair %s: %w", s.path, err)
	}
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return nil, fmt.Errorf("wal: repair %s: %w", s.path, err)
	}
	return damages, nil
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("wal: repair %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("wal: repair %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: repair %s: %w", path, err)
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// VerifyReport is what Verify found in a log directory.
type VerifyReport struct {
	Segments int
	Records  int64 // valid records, lost frames included
	Lost     int64 // lost frames already in the log (earlier repairs)
	FirstSeq uint64
	LastSeq  uint64
	Acked    uint64
	Damages  []Damage // damage not repaired yet (Open repairs it)
}

// Verify reads the log in dir without changing it (the service may be
// running) and reports its damage: what the next Open would repair or cut.
func Verify(dir string) (VerifyReport, error) {
	var rep VerifyReport
	acked, err := readCheckpoint(dir)
	if err != nil {
		return rep, err
	}
	rep.Acked = acked
	segs, err := listSegments(dir)
	if err != nil {
		return rep, fmt.Errorf("wal: %w", err)
	}
	rep.Segments = len(segs)
	for i, s := range segs {
		var nextBase uint64
		if i+1 < len(segs) {
			nextBase = segs[i+1].base
		}
		data, err := os.ReadFile(s.path)
		if err != nil {
			return rep, fmt.Errorf("wal: %w", err)
		}
		refs, damages := walkFrames(s.path, data, s.base, nextBase)
		for _, r := range refs {
			if !r.valid {
				continue
			}
			if rep.FirstSeq == 0 {
				rep.FirstSeq = r.h.seq
			}
			rep.LastSeq = r.h.seq
			rep.Records++
			if r.h.nanos == lostNanos && r.h.length == 0 {
				rep.Lost++
			}
		}
		rep.Damages = append(rep.Damages, damages...)
	}
	return rep, nil
}
