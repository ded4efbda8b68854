package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// A frame is one record on disk:
//
//	0:4   CRC32C (Castagnoli) of bytes 4 to the end of the payload
//	4:8   payload length, uint32 little endian
//	8:16  sequence number, uint64 little endian
//	16:24 append wall time, Unix nanoseconds, int64 little endian
//	24:   payload
//
// The CRC covers the length, the sequence number and the time as well as the
// payload, so a torn or overwritten header is caught like torn data is. The
// sequence number is stored although it could be derived from the segment
// name and the record's position: a misplaced or reordered record is then
// detected instead of silently renumbered.
const headerSize = 24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a decoded frame header.
type header struct {
	crc    uint32
	length uint32
	seq    uint64
	nanos  int64
}

// frameLen is the encoded size of the frame that h heads.
func (h header) frameLen() int64 { return headerSize + int64(h.length) }

// parseHeader decodes the first headerSize bytes of b, which must hold them.
func parseHeader(b []byte) header {
	return header{
		crc:    binary.LittleEndian.Uint32(b[0:4]),
		length: binary.LittleEndian.Uint32(b[4:8]),
		seq:    binary.LittleEndian.Uint64(b[8:16]),
		nanos:  int64(binary.LittleEndian.Uint64(b[16:24])),
	}
}

// errRecordTooLarge is returned for a payload whose length does not fit the
// frame's 32-bit length field.
var errRecordTooLarge = errors.New("wal: record larger than 4 GiB")

// appendFrames encodes recs as frames with their lengths and payloads filled
// in; sealFrame adds the sequence number, time and CRC later, in the writer,
// which is the only place that knows them. Encoding here lets each caller copy
// its own payloads concurrently, and frees the caller's slices once Append
// returns.
func appendFrames(dst []byte, recs [][]byte) ([]byte, error) {
	for _, r := range recs {
		if int64(len(r)) > math.MaxUint32 {
			return nil, errRecordTooLarge
		}
		var h [headerSize]byte
		binary.LittleEndian.PutUint32(h[4:8], uint32(len(r)))
		dst = append(dst, h[:]...)
		dst = append(dst, r...)
	}
	return dst, nil
}

// framesSize is the encoded size of recs.
func framesSize(recs [][]byte) int64 {
	var n int64
	for _, r := range recs {
		n += headerSize + int64(len(r))
	}
	return n
}

// sealFrame stamps a frame made by appendFrames with its sequence number and
// time and computes its CRC.
func sealFrame(frame []byte, seq uint64, nanos int64) {
	binary.LittleEndian.PutUint64(frame[8:16], seq)
	binary.LittleEndian.PutUint64(frame[16:24], uint64(nanos))
	binary.LittleEndian.PutUint32(frame[0:4], crc32.Checksum(frame[4:], castagnoli))
}

// decodeFrame decodes the frame at the start of b. It fails when b is too
// short to hold the frame its header announces (a torn write) or when the CRC
// does not match; the payload aliases b.
func decodeFrame(b []byte) (h header, payload []byte, err error) {
	if len(b) < headerSize {
		return h, nil, fmt.Errorf("truncated header (%d of %d bytes)", len(b), headerSize)
	}
	h = parseHeader(b)
	if int64(len(b)) < h.frameLen() {
		return h, nil, fmt.Errorf("truncated record: header announces %d payload bytes, %d present", h.length, len(b)-headerSize)
	}
	frame := b[:h.frameLen()]
	if crc32.Checksum(frame[4:], castagnoli) != h.crc {
		return h, nil, errors.New("checksum mismatch")
	}
	return h, frame[headerSize:], nil
}
