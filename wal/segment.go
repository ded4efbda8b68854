package wal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Segment files are named after the sequence number of their first record,
// zero-padded so that names sort like numbers: 00000000000000000001.wal.
const (
	segmentExt     = ".wal"
	segmentNameLen = 20
)

// indexSpacing is the distance, in bytes, between two entries of a segment's
// sparse index. Finding a record costs one read of at most this many bytes
// (plus a header), and the index costs 16 bytes of memory per 64 KiB of log.
const indexSpacing = 64 << 10

// ErrCorrupt is wrapped by the errors that report damaged data: a bad record
// anywhere but at the tail of the last segment, or a bad checkpoint. The
// message names the file and offset.
var ErrCorrupt = errors.New("wal: corrupt data")

// indexEntry locates one record inside its segment.
type indexEntry struct {
	seq uint64
	off int64
}

// segment is one file of the log. base, path and startPos never change; size,
// last and index grow as the writer commits records and are guarded by
// Log.mu. rf is the read handle, guarded by Log.ioMu.
type segment struct {
	base     uint64 // sequence number of the first record
	path     string
	startPos int64 // position of byte 0 in the whole log, for byte accounting

	size  int64        // bytes of committed (fsynced) records
	last  uint64       // sequence number of the last committed record; base-1 when empty
	index []indexEntry // sparse: the first record, then one at least every indexSpacing bytes

	rf *os.File // opened by the first read
}

func segmentName(base uint64) string {
	return fmt.Sprintf("%0*d%s", segmentNameLen, base, segmentExt)
}

// parseSegmentName returns the base of a segment file name; ok is false for
// any other file in the directory.
func parseSegmentName(name string) (base uint64, ok bool) {
	digits, found := strings.CutSuffix(name, segmentExt)
	if !found || len(digits) != segmentNameLen {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || base == 0 {
		return 0, false
	}
	return base, true
}

// listSegments returns the segments of dir, oldest first, with only their
// names known.
func listSegments(dir string) ([]*segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			segs = append(segs, &segment{base: base, last: base - 1, path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(segs, func(a, b *segment) int {
		switch {
		case a.base < b.base:
			return -1
		case a.base > b.base:
			return 1
		}
		return 0
	})
	return segs, nil
}

// needsIndex reports whether a record at off must get an index entry, given
// the offset of the segment's last entry (-1 when there is none).
func needsIndex(lastIndexed, off int64) bool {
	return lastIndexed < 0 || off-lastIndexed >= indexSpacing
}

// lastIndexed is the offset of the segment's last index entry, or -1.
func (s *segment) lastIndexed() int64 {
	if len(s.index) == 0 {
		return -1
	}
	return s.index[len(s.index)-1].off
}

// corruptError reports damage in a segment at an offset.
type corruptError struct {
	path   string
	off    int64
	reason string
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("%v: %s at offset %d: %s", ErrCorrupt, e.path, e.off, e.reason)
}

func (e *corruptError) Unwrap() error { return ErrCorrupt }

// scan reads every record of the segment, checking framing, CRC and that
// sequence numbers count up from base, and fills size, last and index. visit
// sees every good record. It stops at the first bad record and returns a
// *corruptError whose offset is the end of the good prefix (size); the caller
// decides whether that is a torn tail to cut or real damage.
func (s *segment) scan(r io.Reader, fileSize int64, visit func(h header, off int64)) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var frame []byte
	s.size, s.last, s.index = 0, s.base-1, nil
	bad := func(reason string) error { return &corruptError{path: s.path, off: s.size, reason: reason} }
	for s.size < fileSize {
		remaining := fileSize - s.size
		if remaining < headerSize {
			return bad(fmt.Sprintf("truncated header (%d of %d bytes)", remaining, headerSize))
		}
		frame = slices.Grow(frame[:0], headerSize)[:headerSize]
		if _, err := io.ReadFull(br, frame); err != nil {
			return fmt.Errorf("wal: read %s: %w", s.path, err)
		}
		h := parseHeader(frame)
		if h.frameLen() > remaining {
			return bad(fmt.Sprintf("truncated record: header announces %d payload bytes, %d present", h.length, remaining-headerSize))
		}
		frame = slices.Grow(frame, int(h.length))[:h.frameLen()]
		if _, err := io.ReadFull(br, frame[headerSize:]); err != nil {
			return fmt.Errorf("wal: read %s: %w", s.path, err)
		}
		if _, _, err := decodeFrame(frame); err != nil {
			return bad(err.Error())
		}
		if want := s.last + 1; h.seq != want {
			return bad(fmt.Sprintf("sequence number %d, want %d", h.seq, want))
		}
		if needsIndex(s.lastIndexed(), s.size) {
			s.index = append(s.index, indexEntry{seq: h.seq, off: s.size})
		}
		if visit != nil {
			visit(h, s.size)
		}
		s.last = h.seq
		s.size += h.frameLen()
	}
	return nil
}
