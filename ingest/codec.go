package ingest

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
	"unsafe"

	"github.com/mcpscope/telemetry/analytics"
)

// A write-ahead-log record is one accepted batch, in a compact binary form:
// faster to write and read than JSON, and it keeps exactly what was accepted
// (validated and normalised items), so a replay needs no re-validation.
//
//	version(1) account mcp received_at(varint ns) n(uvarint) item*
//	item: id ts(varint ns) session method name flags(1) [duration(8)]
//	      error_type error_message client_name client_version server_version
//	      protocol_version user_id nattr(uvarint) (key value)*
//	      error_kind [response_bytes(varint)] args_hash
//
// Strings are uvarint length + bytes. Older records stay readable, so a
// log written by an older build replays after an upgrade: version 1
// (written before items had a protocol_version) has no protocol_version
// string, version 2 (before error_kind, response_bytes and args_hash) ends
// each item with its attributes. response_bytes is there only when the
// item's flags say so (flagResponseBytes).
const (
	codecVersion   = 3
	codecVersionV2 = 2
	codecVersionV1 = 1
)

const (
	flagDuration = 1 << iota
	flagError
	// flagUnverified: the item was accepted while the duplicate filter
	// said "maybe" (Dedup.Admit); the flusher checks it before storing it.
	// Older builds never set it and ignore it.
	flagUnverified
	// flagResponseBytes: the item carries response_bytes (version 3).
	flagResponseBytes
)

// Record is one accepted batch as the write-ahead log stores it.
type Record struct {
	AccountID  string
	MCPID      string
	ReceivedAt time.Time
	Items      []analytics.Item
	// Unverified holds the indices, ascending, of the items accepted while
	// the duplicate filter said "maybe".
	Unverified []int
}

var errCorrupt = errors.New("ingest: corrupt write-ahead-log record")

// Encode appends the binary form of r to dst.
func (r Record) Encode(dst []byte) []byte {
	dst = append(dst, codecVersion)
	dst = appendString(dst, r.AccountID)
	dst = appendString(dst, r.MCPID)
	dst = binary.AppendVarint(dst, r.ReceivedAt.UnixNano())
	dst = binary.AppendUvarint(dst, uint64(len(r.Items)))
	unverified := r.Unverified
	for i := range r.Items {
		it := &r.Items[i]
		dst = appendString(dst, it.ID)
		dst = binary.AppendVarint(dst, it.Timestamp.UnixNano())
		dst = appendString(dst, it.SessionID)
		dst = appendString(dst, it.Method)
		dst = appendString(dst, it.Name)
		var flags byte
		if it.DurationMs != nil {
			flags |= flagDuration
		}
		if it.Status == analytics.StatusError {
			flags |= flagError
		}
		if it.ResponseBytes != nil {
			flags |= flagResponseBytes
		}
		if len(unverified) > 0 && unverified[0] == i {
			flags |= flagUnverified
			unverified = unverified[1:]
		}
		dst = append(dst, flags)
		if it.DurationMs != nil {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(*it.DurationMs))
		}
		dst = appendString(dst, it.ErrorType)
		dst = appendString(dst, it.ErrorMessage)
		dst = appendString(dst, it.ClientName)
		dst = appendString(dst, it.ClientVersion)
		dst = appendString(dst, it.ServerVersion)
		dst = appendString(dst, it.ProtocolVersion)
		dst = appendString(dst, it.UserID)
		dst = binary.AppendUvarint(dst, uint64(len(it.Attributes)))
		for k, v := range it.Attributes {
			dst = appendString(dst, k)
			dst = appendString(dst, v)
		}
		dst = appendString(dst, it.ErrorKind)
		if it.ResponseBytes != nil {
			dst = binary.AppendVarint(dst, *it.ResponseBytes)
		}
		dst = appendString(dst, it.ArgsHash)
	}
	return dst
}

// DecodeRecord parses a record written by Encode. It never panics on
// arbitrary input; anything malformed is errCorrupt.
//
// The strings of the record share one copy of b: one allocation a record
// instead of one a field (they live as long as the record's items anyway).
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	err := r.decode(b, false, func(n int) { r.Items = make([]analytics.Item, n) }, func(i int) *analytics.Item { return &r.Items[i] })
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// decode parses a record written by Encode into r, but for its items:
// once their count n is known it calls grow(n), then decodes item i into
// at(i), in order. The flusher decodes a record's items straight into
// its batch's rows this way, without a slice of items a record to copy
// from. With given, b is the caller's to give away (the log's reader
// allocates it for the caller alone and nothing writes it again): the
// strings are read in place, without the copy.
func (r *Record) decode(b []byte, given bool, grow func(n int), at func(i int) *analytics.Item) error {
	d := decoder{b: b, all: recordText(b, given)}
	version := d.byte()
	if version != codecVersion && version != codecVersionV2 && version != codecVersionV1 {
		return errCorrupt
	}
	r.AccountID = d.string()
	r.MCPID = d.string()
	r.ReceivedAt = time.Unix(0, d.varint()).UTC()
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) { // each item takes at least one byte
		return errCorrupt
	}
	grow(int(n))
	nums := recordNumbers{n: int(n)}
	for i := range int(n) {
		it := at(i)
		it.ID = d.string()
		it.Timestamp = time.Unix(0, d.varint()).UTC()
		it.SessionID = d.string()
		it.Method = d.string()
		it.Name = d.string()
		flags := d.byte()
		if flags&flagDuration != 0 {
			it.DurationMs = nums.duration(i, math.Float64frombits(d.uint64()))
		}
		it.Status = analytics.StatusOK
		if flags&flagError != 0 {
			it.Status = analytics.StatusError
		}
		if flags&flagUnverified != 0 {
			r.Unverified = append(r.Unverified, i)
		}
		it.ErrorType = d.string()
		it.ErrorMessage = d.string()
		it.ClientName = d.string()
		it.ClientVersion = d.string()
		it.ServerVersion = d.string()
		if version >= 2 {
			it.ProtocolVersion = d.string()
		}
		it.UserID = d.string()
		na := d.uvarint()
		if na > analytics.MaxAttributes {
			return errCorrupt
		}
		if na > 0 {
			it.Attributes = make(map[string]string, na)
			for j := uint64(0); j < na; j++ {
				k := d.string()
				it.Attributes[k] = d.string()
			}
		}
		if version >= 3 {
			it.ErrorKind = d.string()
			if flags&flagResponseBytes != 0 {
				it.ResponseBytes = nums.size(i, d.varint())
			}
			it.ArgsHash = d.string()
		}
		if d.err != nil {
			return errCorrupt
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return errCorrupt
	}
	return nil
}

// recordText is b as a string: b itself when given, else a copy.
func recordText(b []byte, given bool) string {
	if given {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
}

// recordNumbers holds the numbers behind the pointers of a record's n
// items, like its strings: one array each a record instead of one
// allocation an item.
type recordNumbers struct {
	n         int
	durations []float64
	sizes     []int64
}

func (r *recordNumbers) duration(i int, v float64) *float64 {
	if r.durations == nil {
		r.durations = make([]float64, r.n)
	}
	r.durations[i] = v
	return &r.durations[i]
}

func (r *recordNumbers) size(i int, v int64) *int64 {
	if r.sizes == nil {
		r.sizes = make([]int64, r.n)
	}
	r.sizes[i] = v
	return &r.sizes[i]
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

type decoder struct {
	b   []byte
	all string // b as a string, from its start: what string returns slices
	err error
}

func (d *decoder) fail() { d.err = errCorrupt; d.b = nil }

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	off := len(d.all) - len(d.b)
	d.b = d.b[n:]
	return d.all[off : off+int(n)]
}
